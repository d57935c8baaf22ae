"""The App Runtime of one connection: exactly one active app task.

`start_app_task(app_id, task_id, params, source)` is the one entry for
every channel: LLM tools (source voice), the device's `app/start_task`
(MQTT, alarms, offline words) and control-plane calls. It checks ids and
params, applies the priority table (protocol/priority.py, the board's
own), checks the files its params name, stops the running task through
one stop path, switches mode, tool policy and prompt, then runs the new
task's skills (docs/runtime.md gives the steps and their answers).

What the child's words lead to is the mode's handler (modes.py); what a
task says and its own prompt are data (the lines file, apps.json); no
code here names an app. It drives its session only through
port.SessionPort, and nothing here outlives the connection.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING

from .. import protocol as proto
from ..protocol import priority
from ..pipeline.reply import committed
from .conversation import Carry
from .lessons import lesson_names
from .memory import Memory
from .modes import HANDLERS
from .proactive import Proactive
from ..config import AppsConfig, ConversationConfig, PromptsConfig, SessionConfig
from .prompts import system_prompt
from .registry import Registry, RegistryError, skill_args

if TYPE_CHECKING:
    from ..pipeline.reply import Turn
    from .port import ConversationStore, SessionPort
    from .registry import Task

log = logging.getLogger(__name__)

LIST_TOOL = "self.mp3.get_list"   # the device's SD card listing (seed §5): what `sd_name` params name
TOOLS_WAIT_S = 5.0                # for a device's tool list before its task's device skills run


def _leading_device_skills(task):
    """How many of the task's first skills run on the device."""
    n = 0
    for skill in task.skills:
        if skill["runs_on"] != "device":
            break
        n += 1
    return n


def _runs(task, params, status_text) -> bool:
    """Does the device's status report (the status skill's answer) say the
    task with these params is what it runs: playing or paused, and the same
    file when the params name one (the play skill's `name`)?"""
    try:
        status = json.loads(status_text)
    except ValueError:
        return False
    if not isinstance(status, dict) or status.get("state") not in ("playing", "paused"):
        return False
    n = _leading_device_skills(task)
    names = [skill_args(skill, params).get("name") for skill in task.skills[:n]]
    named = [x for x in names if isinstance(x, str) and x]
    return not named or status.get("name") in named


def load_registry(path: str | None = None) -> Registry:
    """The app registry, checked as the runtime needs it: every task's mode
    has a handler (modes.py)."""
    registry = Registry.load(path)
    for app in registry.apps.values():
        for task in app.tasks.values():
            if task.mode not in HANDLERS:
                raise RegistryError("%s: %s's interaction_mode %r has no handler (modes.py has: %s)"
                                    % (registry.where, task.key, task.mode, ", ".join(sorted(HANDLERS))))
    return registry


def task_line(session: SessionPort, task: Task, event: str) -> str | None:
    """What a task says on an event (switched, started): its own apps.json
    line if the registry gives one, else the lines file's
    `task.<app>.<task>.<event>`; None when neither has it."""
    return task.line(event, session.language) or session.lines.task_line(task.key, event, session.language)


class TaskError(Exception):
    """A request that cannot be run at all (unknown app, bad params); .code is JSON-RPC's."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class AppRuntime:
    def __init__(self, session: SessionPort, registry: Registry, config: dict, llm_configured: bool = True,
                 conversations: ConversationStore | None = None) -> None:
        self.session = session
        self.registry = registry
        self.cfg = AppsConfig.of(config)
        self.session_cfg = SessionConfig.of(config)
        self.prompts = PromptsConfig.of(config)
        self.task: Task | None = None
        self.params: dict = {}
        self.source: str | None = None
        self.entered_at = 0.0
        self.explicit = False          # has anything asked for a task yet?
        # (time, app.task, source, verdict) for logs and tests
        self.history: list[tuple[float, str, str, str]] = []
        self.proactive = Proactive(session, self.cfg, llm_configured)
        self.memory = Memory(session, self._prompt_again)     # the chat app's memory of the child
        self.memory.start()
        self._skills_task: asyncio.Task | None = None
        # The conversation kept between connections (conversation.py): the
        # history grows, the task switches, it is saved.
        self.carry = Carry(conversations, ConversationConfig.of(config), session, self)
        session.dialogue.on_turn = self.carry.changed
        # Server skills by the name apps.json gives them. `translate` (the
        # seed's name for the translation task's skill) announces, too: the
        # translating itself is the TRANSLATION mode's (modes.py).
        self.server_skills = {
            "proactive_opener": self._skill_opener,
            "announce": self._skill_announce,
            "translate": self._skill_announce,
        }

    # ---- state ----

    @property
    def mode(self) -> str:
        return self.task.mode if self.task else proto.MODE_CHAT

    @property
    def active(self) -> str | None:
        return self.task.key if self.task else None

    def describe(self) -> dict:
        t = self.task
        return proto.app_start_task_result(
            True, t.app_id if t else self.registry.default_app, self.mode,
            active_task_id=t.id if t else None)

    # ---- the one entry ----

    async def start_app_task(self, app_id: str, task_id: str | None = None, params: dict | None = None,
                             source: str = proto.SOURCE_VOICE, listed: list[str] | None = None) -> dict:
        """Result dict (app_start_task_result); raises TaskError for a request
        that can never run. A refusal by priority is a result, not an error.
        listed: the device's file list when the caller has just read it."""
        if source not in proto.SOURCE_PRIORITY:
            raise TaskError(proto.RPC_INVALID_PARAMS, "unknown source %r (sources: %s)"
                            % (source, ", ".join(proto.SOURCES)))
        try:
            task = self.registry.find(app_id, task_id)
        except LookupError as e:
            raise TaskError(proto.RPC_UNKNOWN_TASK, str(e))
        if task.reserved:
            raise TaskError(proto.RPC_UNKNOWN_TASK, "%s is not available yet" % task.key)
        params = dict(params or {})
        err = proto.validate_against(task.params_schema, params, "params")
        if err:
            raise TaskError(proto.RPC_INVALID_PARAMS, "%s: %s" % (task.key, err))
        was_explicit, self.explicit = self.explicit, True
        # A task asked for from any channel (the board's alarm lesson at
        # boot, a parent's, the child's) is the device's now: a kept one not
        # yet confirmed is over.
        self.carry.kept_task = None
        running = await self._current_running()
        verdict, why = priority.decide(self.source if running else None, source)
        self.history.append((time.monotonic(), task.key, source, verdict))
        if verdict == priority.REFUSE:
            log.info("[%s] refused %s from %s: %s", self.session.device_id, task.key, source, why)
            return self._not_accepted(proto.TASK_BUSY, why)
        if _leading_device_skills(task):
            await self._device_tools_listed()
        missing = await self._missing_file(task, params, listed)
        if missing:
            # Refused before anything stops: whatever ran goes on.
            self.explicit = was_explicit
            log.info("[%s] refused %s from %s: %s", self.session.device_id, task.key, source, missing)
            return self._not_accepted(proto.TASK_NOT_FOUND, missing)
        log.info("[%s] %s -> %s (%s, %s)", self.session.device_id, self.active, task.key, source, verdict)
        await self._stop_current()
        self._enter(task, params, source)
        done = 0
        if not self.session.floor.in_reply():
            failed = await self._start_device_skills(task, params, source)
            if failed:
                self.explicit = was_explicit
                return self._not_accepted(proto.TASK_SKILL_FAILED, failed)
            done = _leading_device_skills(task)
        self._skills_task = self.session.spawn(self._run_skills(task, params, source, done))
        return self.describe()

    def _not_accepted(self, code, why):
        out = self.describe()
        out["accepted"] = False
        out["reason"] = why[:500]
        out["code"] = code
        return out

    async def _device_tools_listed(self):
        """A device that speaks MCP asks for its task right after hello (an
        alarm's lesson): its tool list may still be on the way. Wait for it."""
        hello = self.session.hello or {}
        if (hello.get("features") or {}).get("mcp") and not self.session.mcp.ready.is_set():
            try:
                await asyncio.wait_for(self.session.mcp.ready.wait(), TOOLS_WAIT_S)
            except asyncio.TimeoutError:
                log.warning("[%s] no device tool list after %g s", self.session.device_id, TOOLS_WAIT_S)

    async def _start_device_skills(self, task, params, source):
        """Run the task's leading device skills now; the failure, or None.
        A task that cannot start holds nothing: the default task again."""
        for skill in task.skills[:_leading_device_skills(task)]:
            ok, text = await self._run_skill(skill, params, source, with_text=True)
            if not ok:
                log.info("[%s] %s did not start: %s: %s", self.session.device_id, task.key, skill["name"], text)
                self._enter(self.registry.default(), {}, proto.SOURCE_DEFAULT_CHAT)
                return "%s: %s" % (skill["name"], text)
        return None

    async def _missing_file(self, task, params, listed=None):
        """A param the task's schema marks `format: sd_name` must name a file
        the device lists (LIST_TOOL); the refusal, or None. Without the tool
        or a readable list nothing is refused here: the skill itself tells."""
        props = (task.params_schema or {}).get("properties") or {}
        names = [k for k, p in props.items() if isinstance(p, dict) and p.get("format") == "sd_name"
                 and isinstance(params.get(k), str)]
        if not names or not self.session.mcp.has(LIST_TOOL):
            return None
        files = listed
        if files is None:
            text, is_error = await self.session.mcp.call(LIST_TOOL, {}, timeout=3)
            if is_error:
                return None
            files = lesson_names(text)
        for k in names:
            if params[k] not in files:
                return "%s %r is not on the device's SD card (it has: %s)" % (
                    k, params[k], ", ".join(files[:20]) or "nothing")
        return None

    async def open_default(self) -> None:
        """The session's start: chat speaks first, unless the device asks for a
        task of its own at once (an alarm's lesson must not be preceded by a
        chat opener) or the child is already talking."""
        grace = self.cfg.opener_grace_s
        s = self.session
        await self.carry.restored.wait()    # bounded: conversation.RESTORE_WAIT_S
        if s.hello and (s.hello.get("features") or {}).get("mcp"):
            try:
                await asyncio.wait_for(s.mcp.ready.wait(), grace)
            except asyncio.TimeoutError:
                pass
            await asyncio.sleep(0.05)  # a request sent right after the tool list
        else:
            await asyncio.sleep(min(grace, 0.3))
        await self.take_up_kept()
        if self.explicit or s.closed or s.floor.last_user_speech:
            return
        await self.start_default(proto.SOURCE_DEFAULT_CHAT)

    async def start_default(self, source: str = proto.SOURCE_DEFAULT_CHAT) -> dict:
        t = self.registry.default()
        return await self.start_app_task(t.app_id, t.id, {}, source)

    def adopt_default(self) -> None:
        """Be in the default task without running its skills (the session's start)."""
        task = self.registry.default()
        self._enter(task, {}, proto.SOURCE_DEFAULT_CHAT)
        self.history.append((time.monotonic(), task.key, proto.SOURCE_DEFAULT_CHAT, "adopted"))

    async def take_up_kept(self) -> bool:
        """Go on with the task the kept conversation was in (conversation.py)
        only if the device says it still runs it: its status skill (on the
        device) names the same lesson, playing or paused. True when taken up.

        The kept task is only what was running at the last save. A lesson
        that ended meanwhile (played out, stopped, the board powered off,
        reset or flashed anew) must not hold its priority over the board's
        own boot order, the alarm's lesson or the child's wake word; a boot
        plays nothing yet, so a boot takes up no task. A task of the
        server's alone (translation, a chat game) has no device to ask: the
        hello does not tell a device that moved from one that rebooted, so
        it is not taken up either. Whatever is not goes on in the default
        task, with the turns kept, and the store forgets the task."""
        kept = self.carry.kept_task
        if kept is None:
            return False
        device_id = self.session.device_id
        why = await self._kept_not_running(kept)
        if self.carry.kept_task is not kept:
            return False    # a task was asked for meanwhile: it decides
        self.carry.kept_task = None
        if why is not None:
            log.info("[%s] kept task %s.%s not taken up: %s", device_id, kept["app_id"], kept["task_id"], why)
            self.carry.changed()    # the store forgets it too
            return False
        self.resume(kept["app_id"], kept["task_id"], kept["params"], kept["source"])
        log.info("[%s] %s goes on: the device still runs it", device_id, self.active)
        return True

    async def _kept_not_running(self, kept: dict) -> str | None:
        """Why the device does not run the kept task, or None when it does."""
        try:
            task = self.registry.find(kept["app_id"], kept["task_id"])
        except LookupError as e:
            return str(e)
        skill = task.status_skill
        if task.reserved or task is self.registry.default() or not skill or skill["runs_on"] != "device":
            return "no device can say it still runs"
        await self._device_tools_listed()
        if self.carry.kept_task is not kept:
            return "another task was asked for"
        if not self.session.mcp.has(skill["name"]):
            return "the device has no %s" % skill["name"]
        text, is_error = await self.session.mcp.call(skill["name"], {}, timeout=3)
        if is_error or not _runs(task, kept["params"], text):
            return "the device does not run it (%s)" % text[:200]
        return None

    def resume(self, app_id: str, task_id: str | None, params: dict, source: str | None) -> None:
        """Be in a task the device runs already (take_up_kept), without
        running its skills again: they ran on the connection before."""
        try:
            task = self.registry.find(app_id, task_id)
        except LookupError as e:
            log.info("[%s] kept task %s.%s not resumed: %s", self.session.device_id, app_id, task_id, e)
            return
        skill = task.status_skill
        if task.reserved or task is self.registry.default() or not skill or skill["runs_on"] != "device":
            return
        self.explicit = True
        source = source if source in proto.SOURCE_PRIORITY else proto.SOURCE_VOICE
        self._enter(task, dict(params or {}), source)
        self.history.append((time.monotonic(), task.key, source, "resumed"))

    async def _current_running(self):
        """Does the active task still hold its priority? A finished one does not."""
        if self.task is None:
            return False
        skill = self.task.status_skill
        if not skill or skill["runs_on"] != "device" or not self.session.mcp.has(skill["name"]):
            return True
        text, is_error = await self.session.mcp.call(skill["name"], {}, timeout=3)
        if is_error:
            # The device cannot say that anything plays: a task that may have
            # ended must not hold its priority (and the child's wake word) for
            # ever. The board arbitrates its own player with the same table.
            log.info("[%s] %s: %s failed (%s): taken as finished", self.session.device_id, self.task.key,
                     skill["name"], text[:200])
            state = "idle"
        else:
            try:
                state = json.loads(text).get("state")
            except (ValueError, AttributeError):
                return True
        if state == "idle":
            log.info("[%s] %s has finished", self.session.device_id, self.task.key)
            if self.task.on_finish == "default":
                self._enter(self.registry.default(), {}, proto.SOURCE_DEFAULT_CHAT)
            return False
        return True

    async def _stop_current(self):
        """The one stop path: proactive timers, the reply in flight, the task's skills."""
        self.proactive.cancel()
        if self._skills_task is not None and not self._skills_task.done() \
                and self._skills_task is not asyncio.current_task():
            self._skills_task.cancel()
        if self.task is not None and not self.session.floor.in_reply():
            await self.session.floor.abort("preempted")
        if self.task is not None:
            for skill in self.task.stop_skills:
                await self._run_skill(skill, self.params, self.source)

    def _enter(self, task, params, source):
        self.task, self.params, self.source = task, params, source
        self.entered_at = time.monotonic()
        d = self.session.dialogue
        d.tool_policy = task.policy()
        d.system_prompt = system_prompt(self.prompts, task, self.memory.prompt())
        self.carry.changed()

    def _prompt_again(self):
        if self.task is not None:
            self.session.dialogue.system_prompt = system_prompt(self.prompts, self.task, self.memory.prompt())

    async def _run_skills(self, task, params, source, done=0):
        await self.session.floor.wait_quiet()
        for skill in task.skills[done:]:
            if self.task is not task:
                return  # preempted meanwhile
            if not await self._run_skill(skill, params, source) and skill["runs_on"] == "device" \
                    and self.task is task:
                # A lesson that could not start holds no priority.
                log.info("[%s] %s did not start: back to the default task", self.session.device_id, task.key)
                self._enter(self.registry.default(), {}, proto.SOURCE_DEFAULT_CHAT)
                return

    async def _run_skill(self, skill, params, source, with_text=False):
        """True when the skill ran; (ok, text) with_text."""
        name = skill["name"]
        ok, text = True, ""
        if skill["runs_on"] == "server":
            fn = self.server_skills.get(name)
            if fn is None:
                log.error("no server skill %s", name)
                ok, text = False, "no server skill %s" % name
            else:
                await fn(params, source)
        elif not self.session.mcp.has(name):
            log.warning("[%s] the device has no %s", self.session.device_id, name)
            ok, text = False, "the device has no such tool"
        else:
            args = skill_args(skill, params)
            text, is_error = await self.session.mcp.call(name, args)
            log.info("[%s] skill %s(%s) -> %s", self.session.device_id, name,
                     json.dumps(args, ensure_ascii=False), text)
            ok = not is_error
        return (ok, text) if with_text else ok

    # ---- server skills ----

    async def _skill_opener(self, params, source):
        # The companion does not invite a child to talk when talking is not allowed.
        if not await self.talk_refused(speak=False):
            await self.proactive.open(self.entered_at)

    async def _skill_announce(self, params, source):
        """The task's `started` line, for a child who asked by voice (a parent's
        or an alarm's task starts without a word)."""
        line = task_line(self.session, self.task, "started") if self.task else None
        if source == proto.SOURCE_VOICE and line:
            await self.session.floor.say(line)

    # ---- what the user's words and wakes lead to ----

    async def talk_refused(self, speak: bool = True, turn: Turn | None = None,
                           after_wake: bool = False) -> bool:
        """The one check of the family's limits (control/family.py): inside
        bedtime or over the day's talk time, the child's wake or words get
        the kind line (when `speak`) and no chat or translation. A lesson is
        never asked about: what a parent or an alarm started runs."""
        family = self.session.family
        key = await family.refusal(self.session.device_id) if family is not None else None
        if key is None:
            return False
        s = self.session
        log.info("[%s] %s: no talking now (%s)", s.device_id, self.active, key)
        if not speak:
            return True
        if after_wake:
            # As a greeting would: not over words that follow the wake word
            # (those get the line themselves).
            woke = s.floor.last_user_speech
            await s.floor.child_done()
            if s.closed or s.floor.last_user_speech > woke:
                return True
        elif not await committed(turn):
            return True     # the child went on: the words when final get the line
        await s.floor.say(s.lines.get(key, s.language))
        return True

    async def route(self, turn: Turn) -> None:
        self.proactive.user_spoke()
        handler = HANDLERS[self.mode]
        # Only an answer the mode may prepare early goes ahead before the
        # words are final; anything else (translating, leaving, switching) waits.
        if not handler.answers_early(self, turn.text) and not await committed(turn):
            return
        if handler.talks and await self.talk_refused(turn=turn):
            return
        await handler.words(self, turn)

    async def on_wake(self, text: str) -> None:
        """A user wake word returns to the default task from any other (a
        lesson, translation), priority permitting: a parents' or an alarm's
        task is not reset. In the default task the session greets as usual."""
        if self.task is not None and self.task is not self.registry.default():
            result = await self.start_default(proto.SOURCE_VOICE)
            if not result["accepted"]:
                log.info("[%s] wake word during %s: %s", self.session.device_id, self.active, result["reason"])
            return
        self.proactive.user_spoke()
        if await self.talk_refused(after_wake=True):
            return
        await self.session.floor.greet(text)

    async def on_listen_start(self) -> None:
        await HANDLERS[self.mode].listen_start(self)

    def close(self) -> None:
        self.proactive.cancel()
