"""A device's conversation carried from one connection to the next: the
recent turns, the active app task and its state, kept in the control store
(port.ConversationStore) so a device that reconnects to another node, or to
this one after a restart, goes on where it was.

    carry = Carry(store, ConversationConfig.of(config), session, runtime)
    await carry.restore()      # after hello, before the device's first words are read
    carry.kept_task            # the task it was in, until the device says whether it still runs it
    carry.changed()            # after each turn joined the history, and at a task switch

The turns are taken up at once; the task is not. A kept task is only what
the conversation was in when last saved: the lesson may have ended since
(played out, stopped, the board powered off, reset, flashed anew), and a
boot is a new start whose first task is the board's own boot order
(docs/entry.md). So the runtime takes the task up only when the device
itself says it still runs it (AppRuntime.take_up_kept: the task's status
skill naming the same lesson), and any task asked for before that (the
board's alarm lesson, a parent's, the child's) ends the kept one.

What is kept is bounded before it is saved: the last `max_turns` turns of
the child (a turn starts at a user message, so a tool call stays with its
result) and at most `max_bytes` of JSON. Saves run one at a time per
session, the latest state winning; a store that is away costs a log line
and the conversation goes on here (only a move would lose it). How long
the store keeps it, and whether a device's is kept at all, is the store's
(keep_hours, the parents' opt-out).
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import ConversationConfig
    from .port import ConversationStore, RunningTask, SessionPort

log = logging.getLogger(__name__)

RESTORE_WAIT_S = 2.0    # a slow store delays the device's first answer at most this long


def bounded(history: list[dict], max_turns: int, max_bytes: int) -> list[dict]:
    """The newest whole turns of `history` within both bounds."""
    starts = [i for i, m in enumerate(history) if m.get("role") == "user"]
    if not starts:
        return []
    starts = starts[-max_turns:] if max_turns > 0 else []
    for start in starts:
        kept = history[start:]
        if len(json.dumps(kept, ensure_ascii=False).encode("utf-8")) <= max_bytes:
            return kept
    return []


class Carry:
    def __init__(self, store: ConversationStore | None, cfg: ConversationConfig, session: SessionPort,
                 runtime: RunningTask) -> None:
        self.store = store
        self.session = session
        self.runtime = runtime
        self.max_age_s = cfg.keep_hours * 3600
        self.max_turns = cfg.max_turns
        self.max_bytes = cfg.max_bytes
        self.restored_turns = 0
        self.ready = False      # nothing is saved before the kept conversation was read
        self.restored = asyncio.Event()     # set once restore() is over, kept or not
        # {app_id, task_id, params, source} of the kept conversation, until
        # the device confirms it still runs it or anything else starts.
        self.kept_task: dict | None = None
        self._saving: asyncio.Task | None = None
        self._again = False

    async def restore(self) -> bool:
        """Take up the device's kept conversation, if any: True when there was one."""
        try:
            kept = await self._load()
        finally:
            self.ready = True
            self.restored.set()
        if not kept:
            return False
        device_id = self.session.device_id
        turns = bounded(kept["turns"], self.max_turns, self.max_bytes)
        self.session.dialogue.history = turns + self.session.dialogue.history
        self.restored_turns = sum(1 for m in turns if m.get("role") == "user")
        state = kept.get("app_state") or {}
        if kept.get("app_id"):
            self.kept_task = {"app_id": kept["app_id"], "task_id": kept.get("task_id"),
                              "params": state.get("params") or {}, "source": state.get("source")}
        log.info("[%s] conversation goes on: %d turns%s", device_id, self.restored_turns,
                 ", %s.%s if the device still runs it" % (kept["app_id"], kept.get("task_id"))
                 if self.kept_task else "")
        return True

    async def _load(self):
        if self.store is None:
            return None
        try:
            return await asyncio.wait_for(self.store.load_conversation(self.session.device_id, self.max_age_s),
                                          RESTORE_WAIT_S)
        except Exception as e:   # the store away or slow: a new conversation, said in the log
            log.warning("[%s] conversation not restored: %s", self.session.device_id,
                        getattr(e, "message", None) or repr(e))
            return None

    def snapshot(self) -> dict:
        turns = bounded(self.session.dialogue.history, self.max_turns, self.max_bytes)
        k = self.kept_task
        if k is not None:
            # Not confirmed yet, not over either: a turn saved meanwhile keeps it.
            return {"turns": turns, "app_id": k["app_id"], "task_id": k["task_id"],
                    "app_state": {"params": k["params"], "source": k["source"]}}
        t = self.runtime.task
        return {"turns": turns,
                "app_id": t.app_id if t else None, "task_id": t.id if t else None,
                "app_state": {"params": self.runtime.params, "source": self.runtime.source}}

    def changed(self) -> None:
        """Save the conversation as it is now (soon, in order; one save at a time)."""
        if self.store is None or not self.ready:
            return
        if self._saving is not None and not self._saving.done():
            self._again = True
            return
        # Not one of the session's tasks: a turn answered just before the
        # device hangs up is still saved.
        self._saving = asyncio.ensure_future(self._save())

    async def _save(self) -> None:
        store = self.store
        assert store is not None    # changed() saves only with a store
        while True:
            self._again = False
            try:
                await store.save_conversation(self.session.device_id, self.snapshot())
            except Exception as e:
                log.warning("[%s] conversation not saved: %s", self.session.device_id,
                            getattr(e, "message", None) or repr(e))
                return
            if not self._again:
                return
