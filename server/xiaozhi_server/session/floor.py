"""Who may speak now on one connection: the child, or the server's reply.

The floor holds the reply being spoken (pipeline/reply.py's handle) and
what the child's side of the turn is doing (push to talk held, the moment
after a wake word, the household's choice of device). Everything the
server says goes through it: an answer to the child, an opener, a line a
lesson or a parent's MQTT command or a schedule starts. One reply at a
time; a new one cuts the last.

Rules it keeps for the child's sake:
- every reply belongs to an epoch; `abort` starts a new epoch, and output
  of an older epoch (a late ASR result, LLM text, TTS audio) is dropped;
- speech while the server speaks barges in (realtime mode, or during the
  short greeting after a wake word, so no word after the wake word is lost);
- the server never speaks on its own over the child's turn: a greeting or
  an opener waits while push to talk is held and right after a wake word
  (stock firmware mutes its mic while the server speaks), see child_done();
- of a household's devices that hear one wake word, only one answers
  (services.wake_floor): until that is decided nothing of the wake is
  answered, and a device that lost is sent back to idle without a word.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable

from .. import protocol as proto
from ..pipeline.reply import Reply, Turn, one
from ..text.lang import has_han

if TYPE_CHECKING:
    from ..pipeline.chain import Chain
    from ..pipeline.listener import Listener
    from ..pipeline.speaker import Speaker

log = logging.getLogger(__name__)

# The goodbye's reason for a device whose household's wake word another
# device answers (our firmware then stays idle: app/device.py).
ANSWERED_ELSEWHERE = "another_device_answered"

# The reply whose work is running; tasks it spawns (the speaker's
# synthesis, tool calls inside it) inherit it.
_CURRENT_REPLY: contextvars.ContextVar[Reply | None] = contextvars.ContextVar("current_reply", default=None)


def lang_of(text: str, default: str) -> str:
    """The language of a short line the child said (a wake word, a goodbye)."""
    if has_han(text):
        return "zh"
    return "en" if any(c.isalpha() for c in text) else default


class Floor:
    def __init__(self, session: Any, speaker: Speaker, chain: Chain) -> None:
        # The session gives the wire (send_json, close), its lines and
        # config; the floor never sends anything but `tts stop` itself.
        self.session = session
        self.speaker = speaker
        self.chain = chain
        self.epoch = 0
        self.epoch_at = 0.0             # when the current epoch began (the last abort)
        self.reply: Reply | None = None     # the reply being spoken (or prepared)
        self.greeting = False
        self.last_activity = time.monotonic()
        self.last_user_speech = 0.0     # when the child last spoke (VAD start or words)
        self.last_tts_stop = 0.0        # when we last sent tts stop (the session's send_json sets it)
        self._ptt_free = asyncio.Event()    # cleared while push to talk is held
        self._ptt_free.set()
        self._after_wake: asyncio.Task | None = None   # True = the child stayed quiet after the wake word
        self._household: asyncio.Task | None = None    # True = this device answers its last wake word

    # ---- the server's side: replies ----

    def start(self, work: Callable[[Reply], Awaitable[Any]], turn: Turn | None = None) -> Reply:
        """Run work(reply) as the one reply (cutting any current one) in the
        current epoch. turn: what it answers; dropped unheard if the child
        goes on (on_commit)."""
        self.cancel()
        reply = self.reply = Reply(self.epoch, turn)
        session = self.session

        async def guarded():
            _CURRENT_REPLY.set(reply)
            try:
                await work(reply)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("[%s] reply failed", session.device_id)
                if self.epoch == reply.epoch and self.speaker.speaking is False:
                    await session.send_json(proto.tts(proto.TTS_STOP, session_id=session.id))
        reply.task = asyncio.create_task(guarded())
        return reply

    def cancel(self) -> None:
        self.speaker.cancel()
        if self.reply is not None:
            self.reply.cancel()
        self.reply = None

    @property
    def busy(self) -> bool:
        """The server is speaking or preparing a reply."""
        return self.speaker.speaking or (self.reply is not None and not self.reply.done)

    async def abort(self, reason: str) -> None:
        """Stop speaking now; nothing of what was in flight may follow."""
        self.epoch += 1
        self.epoch_at = time.monotonic()
        was_speaking = self.busy
        self.cancel()
        log.info("[%s] abort (%s)", self.session.device_id, reason)
        if was_speaking:
            await self.session.send_json(proto.tts(proto.TTS_STOP, session_id=self.session.id))

    def in_reply(self) -> bool:
        """True when called from inside the reply being spoken (a tool call)."""
        return self.reply is not None and _CURRENT_REPLY.get() is self.reply

    async def wait_quiet(self) -> None:
        """Until the current reply (if any, and not the caller itself) is over."""
        t = self.reply.task if self.reply is not None else None
        if t is not None and not t.done() and not self.in_reply():
            await asyncio.wait({t})

    async def say(self, text: str) -> bool:
        """Speak one line as a reply of its own; True if it was heard to the end."""
        return await self.start(lambda r: self.line(r, text)).heard()

    async def line(self, reply: Reply, text: str) -> bool:
        """A fixed line (an opener, an error line): not through the chain's stages."""
        return await self.speaker.speak(one(text), reply)

    async def speak(self, reply: Reply, sentences: AsyncIterator[str]) -> bool:
        """Speak a reply's sentences as they come (False if cut off); the
        reply's `said` gets each one as it goes to TTS (after the chain's stages)."""
        return await self.speaker.speak(self.chain.spoken(sentences, reply.gate, reply.said), reply)

    def on_commit(self, turn: Turn) -> None:
        """The turn's words were not final (the child went on): the reply
        prepared for them is dropped before anything is heard."""
        r = self.reply
        if turn.withdrawn and r is not None and r.turn is turn and not r.done:
            self.cancel()

    async def greet(self, text: str) -> None:
        """A wake word: a short greeting, but only if the child says nothing
        more. Stock firmware (and py-xiaozhi, and ours) mute the mic while the
        server speaks, so a greeting at once would swallow the words that
        follow the wake word; they are answered instead."""
        self.last_activity = time.monotonic()
        if self.speaker.speaking:
            await self.abort("wake_word_detected")
        wait = self._after_wake
        if wait is not None:
            await asyncio.wait({wait})
            if wait.cancelled() or not wait.result():
                return  # the child went on talking (or a newer wake word took over)
        self.greeting = True
        line = self.session.lines.get("greeting", lang_of(text, self.session.language))

        async def greet(reply):
            try:
                await self.line(reply, line)
            finally:
                self.greeting = False
        self.start(greet)

    def farewell(self, text: str) -> None:
        """The child said goodbye: answer, then end the session."""
        line = self.session.lines.get("farewell", lang_of(text, self.session.language))

        async def farewell(reply):
            await self.line(reply, line)
            await self.session.close("exit phrase")
        self.start(farewell)

    # ---- the child's side ----

    def spoke(self) -> None:
        self.last_activity = self.last_user_speech = time.monotonic()

    def press(self, manual: bool) -> None:
        """listen start: with push to talk the device records until listen stop."""
        if manual:
            self._ptt_free.clear()
        else:
            self._ptt_free.set()

    def release(self) -> None:
        self._ptt_free.set()

    async def speech_started(self, mode: str) -> None:
        """The VAD heard the child start: barge in where the device listens while we speak."""
        self.spoke()
        if self.speaker.speaking and (self.greeting or mode == proto.LISTEN_MODE_REALTIME):
            await self.abort("barge_in")

    def woke(self, listener: Listener, level: Any, score: Any) -> None:
        """The device heard its wake word: wait for the child's next words (or
        their silence), and ask the household who answers."""
        self.last_user_speech = woke = time.monotonic()
        if self._after_wake is not None:
            self._after_wake.cancel()
        self._after_wake = self.session.spawn(self._quiet_after_wake(listener, woke))
        if self.session.services.wake_floor is not None:
            self._household = self.session.spawn(self._claim(level, score))

    async def _claim(self, level, score):
        """Ask whether this device answers its household's wake word; if
        another does, say goodbye (stock firmware goes idle when its channel
        closes, as ours does) and end the session."""
        session = self.session
        if await session.services.wake_floor.claim(session.device_id, level, score):
            return True
        log.info("[%s] another device of the household answers the wake word: back to idle", session.device_id)
        self.cancel()
        await session.close(ANSWERED_ELSEWHERE)
        return False

    async def answered(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run fn(*args) once the wake word's arbitration (if any) let this device answer."""
        household = self._household
        if household is not None:
            await asyncio.wait({household})
            if household.cancelled() or household.exception() is not None or not household.result():
                return
        await fn(*args)

    async def _quiet_after_wake(self, lis, woke):
        """True once the child has stayed quiet for `wake_quiet_ms` of the audio
        heard after the wake word; False as soon as they speak or type. A client
        that sends no audio (the browser page) counts as quiet after 1.5 times
        as long on the clock. Heard audio, not the clock, decides while audio
        flows, so a VAD running late on a busy machine never greets over words."""
        quiet_ms = self.session.cfg.wake_quiet_ms
        heard0 = lis.heard_ms
        while not self.session.closed:
            if self.last_user_speech > woke:
                return False
            detector = lis.detector
            if lis.heard_ms - heard0 >= quiet_ms and not (detector is not None and detector.onset):
                return True
            silent_since = max(woke, lis.last_frame_at)
            if time.monotonic() - silent_since >= 1.5 * quiet_ms / 1000 and lis.caught_up:
                return True
            lis.progress.clear()
            try:
                await asyncio.wait_for(lis.progress.wait(), 0.1)
            except asyncio.TimeoutError:
                pass
        return False

    async def child_done(self) -> None:
        """Until the child's turn is over: push to talk released, and the moment
        after a wake word settled (the child stayed quiet, or spoke and is being
        answered). What the server says on its own (opener, invitation) waits
        here, then checks whether the child spoke meanwhile."""
        while not self.session.closed:
            if not self._ptt_free.is_set():
                await self._ptt_free.wait()
            elif self._after_wake is not None and not self._after_wake.done():
                await asyncio.wait({self._after_wake})
            else:
                return

    async def watch_idle(self) -> None:
        """Nobody spoke for `idle_timeout_s`: say goodbye and close."""
        session = self.session
        limit = session.cfg.idle_timeout_s
        while not session.closed:
            await asyncio.sleep(min(1.0, limit / 4))
            if self.busy:
                self.last_activity = time.monotonic()
            elif time.monotonic() - self.last_activity > limit:
                log.info("[%s] %s s without speech: goodbye", session.device_id, limit)
                await self.speaker.say(session.lines.get("idle_bye", session.language))
                await session.close("idle")
                return

    def close(self) -> None:
        """The connection is gone: no reply of this epoch may go on."""
        self._ptt_free.set()
        self.epoch += 1
        self.cancel()
