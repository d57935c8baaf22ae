"""The child's side of one connection: what the device says it heard
(listen start/stop/detect) and the listener's turns, on to the App Runtime.

    device audio -> Listener (pipeline/listener.py) -> Turn -> on_turn()
    typed words, listen detect -> heard()
    heard(): the chain's word stages -> `stt` to the device once final
             -> runtime.route(turn) (runtime/runtime.py), once the household
             lets this device answer (floor.answered)

A turn whose end was only a guess carries a `commit` future: the reply the
runtime prepares for it is dropped unheard if the child goes on
(floor.on_commit), and nothing of it is shown before it is final.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .. import protocol as proto
from ..pipeline.care import write_later
from ..pipeline.reply import Turn, committed
from ..pipeline.safety import Instead
from ..text.phrases import plain
from .floor import lang_of

if TYPE_CHECKING:
    from ..pipeline.listener import Listener

log = logging.getLogger(__name__)


class Hearing:
    def __init__(self, session: Any) -> None:
        # The session gives the wire (send_json, spawn), the floor, the chain
        # and the runtime; hearing holds no state of its own but the listener.
        self.session = session
        self.floor = session.floor
        self.listener: Listener = session.chain.listener(self.speech_started, self.on_turn)

    # ---- what the device says ----

    def listen_start(self, mode: str) -> None:
        self.listener.start(mode)
        self.floor.press(self.listener.mode == proto.LISTEN_MODE_MANUAL)
        runtime = self.session.runtime
        if runtime is not None:
            # Off the receive loop (here and below): the runtime may wait for
            # the device's answers, which that loop has to read.
            self.session.spawn(self.floor.answered(runtime.on_listen_start))

    async def listen_stop(self) -> None:
        await self.listener.stop()
        self.floor.release()

    async def detect(self, text: str, level: Any = None, score: Any = None) -> None:
        """listen detect: the device's wake word, or words typed on it."""
        if not self._is_wake_word(text):
            await self.heard(Turn(text))
            return
        # The audio before the detect is the wake word itself: not words to answer.
        self.listener.drop_pending()
        self.floor.woke(self.listener, level, score)
        runtime = self.session.runtime
        if runtime is not None:
            self.session.spawn(self.floor.answered(runtime.on_wake, text))

    def _is_wake_word(self, text):
        t = plain(text)
        return bool(t) and t in [plain(w) for w in self.session.cfg.wake_words]

    # ---- what the listener hears ----

    async def speech_started(self) -> None:
        await self.floor.speech_started(self.listener.mode)

    async def on_turn(self, turn: Turn) -> None:
        session = self.session
        if session.closed:
            return
        if turn.ended_at is not None and turn.ended_at < self.floor.epoch_at:
            log.info("[%s] dropped %r: an abort came after it", session.device_id, turn.text)
            return
        if turn.failed:
            # ASR gave no words (logged where it failed): say so rather than
            # leave the child waiting in silence.
            self.floor.spoke()
            line = session.lines.get("asr_failed", session.language)
            self.floor.start(lambda reply: self.floor.line(reply, line))
            return
        await self.heard(turn)

    async def heard(self, turn: Turn) -> None:
        """The child's words (spoken or typed) through the word stages to the runtime."""
        session = self.session
        self.floor.spoke()
        chain = session.chain
        if chain.words:
            heard = await chain.heard(turn.text)
            if heard is None:
                log.info("[%s] %r dropped by the pipeline's word stages", session.device_id, turn.text)
                return
            if isinstance(heard, Instead):
                session.spawn(self._say_instead(heard, turn))
                return
            turn.text = heard
        # The server's own lines (a tool's, an app's) are said in the language
        # of the child's last words: config language is only where it starts.
        session.language = lang_of(turn.text, session.language)
        session.spawn(self.floor.answered(self._send_stt, turn))
        if turn.commit is not None:
            # A speculative end of turn: if the child goes on, the reply
            # prepared for these words is dropped before anything is heard.
            turn.commit.add_done_callback(lambda _f: self.floor.on_commit(turn))
        if session.runtime is not None:
            session.spawn(self.floor.answered(session.runtime.route, turn))

    async def _say_instead(self, instead, turn):
        """A word stage answered in place of the child's words (the safety
        filter's redirect): once the words are final, the line is the reply;
        the words are not shown (no stt) and go to no model."""
        session = self.session
        if not await committed(turn) or session.closed:
            return
        session.chain.confirm_when_final(instead, None)
        runtime = session.runtime
        if runtime is not None:
            runtime.proactive.user_spoke()
        self.floor.start(lambda reply: self.floor.line(reply, instead.line))
        care = session.care
        if care is not None and runtime is not None and runtime.task is not None:
            write_later("turn", session.device_id,
                        care.add_turn(session.device_id, runtime.task.app_id, turn.text, instead.line))

    async def _send_stt(self, turn):
        if await committed(turn):
            await self.session.send_json(proto.stt(turn.text, session_id=self.session.id))
