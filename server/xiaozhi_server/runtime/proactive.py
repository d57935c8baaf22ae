"""Chat speaks first, and invites again after a silence — a bounded number of times.
Without a language model it invites to nothing: it says what to configure.

On entering chat.conversation the companion says an opener (one of the
configured lines, or a greeting from the LLM with apps.opener: llm). Once
it has been heard, a timer waits `reinvite_after_s` of user silence and
invites once more, at most `max_reinvites` times (default 1). Anything the
user says or a wake word stops the timer: it never nags in a loop.

It never talks over the child's turn. Stock firmware and py-xiaozhi mute
the mic while the server speaks, so a line sent while push to talk is held
(after `listen start` with mode manual), or right after a wake word, would
cost the child their words. The opener and the invitation wait until the
turn is over (the session's floor.child_done) and are then dropped if the child spoke
meanwhile: answering beats greeting. A press with no words gets the opener
once the button is released.
"""
from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import TYPE_CHECKING

from ..pipeline.reply import Turn
from .modes import chat_reply

if TYPE_CHECKING:
    from ..config import AppsConfig
    from .port import SessionPort

log = logging.getLogger(__name__)

LLM_OPENER_CUE = ("(The child has just come to talk with you. Greet them warmly and suggest one "
                  "thing to talk about, in one short sentence.)")


class Proactive:
    def __init__(self, session: SessionPort, cfg: AppsConfig, llm_configured: bool = True) -> None:
        self.session = session
        self.cfg = cfg
        self.llm_configured = llm_configured
        self._timer = None
        self.invites = 0
        self.spoken: list[str] = []      # what it said, for logs and tests

    def _line(self, key):
        """One of the config's `<key>_lines` if it gives them, else of the lines file's `<key>`."""
        given = getattr(self.cfg, key + "_lines", None)    # opener_no_model has none
        if given is None:
            choice = self.session.lines.choices(key, self.session.language)
        else:
            choice = given.get(self.session.language) or given.get("en") or []
        return random.choice(choice) if choice else None

    async def open(self, entered_at: float = 0.0) -> None:
        """Speak first. Skipped when the child already spoke since entered_at."""
        self.cancel()
        self.invites = 0
        floor = self.session.floor
        await floor.child_done()
        if floor.last_user_speech > entered_at or self.session.closed:
            return  # the child is already talking: answering beats greeting
        started = time.monotonic()
        if not self.llm_configured and self.cfg.opener_lines is None:
            # Nothing could answer a chat: no invitation to one, but what
            # to configure instead (said, not armed for a second invitation).
            line = self._line("opener_no_model")
            if line:
                self.spoken.append(line)
                await floor.say(line)
            return
        if self.cfg.opener == "llm" and self.llm_configured:
            session = self.session
            heard = await floor.start(lambda reply: chat_reply(session, reply), Turn(LLM_OPENER_CUE)).heard()
        else:
            line = self._line("opener")
            if not line:
                return
            self.spoken.append(line)
            self.session.dialogue.add_assistant_line(line)
            heard = await floor.say(line)
        if heard and floor.last_user_speech < started:
            self._arm()

    def _arm(self):
        if self.invites >= self.cfg.max_reinvites:
            return
        self._timer = self.session.spawn(self._wait_then_invite(time.monotonic()))

    async def _wait_then_invite(self, armed_at):
        await asyncio.sleep(self.cfg.reinvite_after_s)
        await self.session.floor.child_done()
        if self.session.floor.last_user_speech > armed_at or self.session.closed:
            return
        line = self._line("reinvite")
        if not line:
            return
        self.invites += 1
        self.spoken.append(line)
        self.session.dialogue.add_assistant_line(line)
        log.info("[%s] inviting again (%d)", self.session.device_id, self.invites)
        heard = await self.session.floor.say(line)
        if heard:
            self._arm()

    def user_spoke(self) -> None:
        self.cancel()

    def cancel(self) -> None:
        if self._timer is not None and not self._timer.done() and self._timer is not asyncio.current_task():
            self._timer.cancel()
        self._timer = None
