"""Speaking to one device: sentences -> TTS -> 24 kHz -> Opus -> paced frames.

`speak(sentences, reply)` takes an async iterator of sentences and sends, in
order: `tts start` (once), then per sentence `sentence_start` (the
subtitle), its audio frames paced in real time, `sentence_end`; finally,
after the last frame has had time to play, `tts stop`. Synthesis of the
next sentence overlaps the playing of the current one, so there is no gap
between sentences. A sentence no TTS provider can render is still sent as
its subtitle: nothing said is lost.

`cancel()` (barge-in) stops the frames within one frame time and makes
`speak` return False; the caller decides what to send then (tts stop).
Each reply has its own encoder and pacer: a cancelled reply that winds
down late cannot disturb the next.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable

from .. import protocol as proto
from ..pools import run_downstream
from .emotion import strip_emoji
from .opus import OpusEncoder
from .pacer import Pacer
from ..audio.resample import DEVICE_RATE, Resampler

if TYPE_CHECKING:
    from ..providers.base import TtsLike
    from .reply import Reply

log = logging.getLogger(__name__)

_END = object()


def _closed_report(task):
    if not task.cancelled() and task.exception() is not None:
        log.info("closing a reply's stream failed: %r", task.exception())


async def close_stream(agen):
    """Close an async generator (the reply's sentences, a TTS stream) here and
    to the end, even if the caller is cancelled again meanwhile.

    Left to the garbage collector, a chain of generators (sentences -> LLM
    stream -> HTTP body) is finalised by one task per generator at once: the
    inner ones are still being closed by the outer one when their own task
    runs, which fails with "aclose(): asynchronous generator is already
    running" (seen when the browser test page aborts a reply)."""
    aclose = getattr(agen, "aclose", None)
    if aclose is None:
        return
    closing = asyncio.ensure_future(aclose())
    closing.add_done_callback(_closed_report)
    await asyncio.shield(closing)


class _Reply:
    """What one reply owns, so that a cancelled reply finishing late can never
    touch the next one: its own encoder, pacer and synthesis task."""

    __slots__ = ("encoder", "pacer", "producer")

    def __init__(self, rate, send_audio, lead_frames, record):
        self.encoder = OpusEncoder(rate)
        self.pacer = Pacer(send_audio, frame_ms=60, lead_frames=lead_frames, record=record)
        self.producer = None


class Speaker:
    def __init__(self, tts: TtsLike, send_json: Callable[[dict], Awaitable[bool]],
                 send_audio: Callable[[bytes], Awaitable[None]], session_id: str, lead_frames: int = 3,
                 rate: int = DEVICE_RATE) -> None:
        self.tts = tts
        self._send_json = send_json
        self._send_audio = send_audio
        self.session_id = session_id
        self.rate = rate
        self.lead_frames = lead_frames
        self.speaking = False
        self.pacer: Pacer | None = None            # the current reply's pacer (figures for benchmarks)
        self.record = False          # pacers keep every frame's timing (benchmarks)
        self.on_reply_end: Callable[[Pacer], None] | None = None   # after each reply, for figures
        self._current: _Reply | None = None

    def cancel(self) -> None:
        r = self._current
        if r is not None:
            r.pacer.cancel()
            if r.producer is not None:
                r.producer.cancel()

    @property
    def cancelled(self) -> bool:
        return self._current is None or self._current.pacer.cancelled

    async def _encode(self, reply, resampler, pcm, last):
        def work():
            out = resampler.process(pcm) if pcm else b""
            if last:
                out += resampler.flush()
            frames = reply.encoder.encode(out)
            if last:
                frames += reply.encoder.flush()
            return frames
        # Its own pool: a reply's frames never wait behind upstream decoding or ASR.
        return await run_downstream(work)

    def _voice(self, text, language):
        """The TTS for one sentence. One that names no language by its script
        (a number, a count: no letter at all) is read in the language the
        child spoke, where the TTS has a voice per language (the router's
        `voices`); otherwise the TTS chooses, by the sentence's script."""
        voices = getattr(self.tts, "voices", None)
        if language and isinstance(voices, dict) and language in voices and not any(c.isalpha() for c in text):
            return voices[language]
        return self.tts

    async def _produce(self, reply, sentences, queue, language=None):
        """Synthesize each sentence into ("start", text) ("frames", [..]) ("end", text) items."""
        try:
            async for text in sentences:
                spoken = strip_emoji(text).strip()
                if not spoken:
                    continue
                await queue.put(("start", text))
                resampler = None
                chunks = self._voice(spoken, language).stream(spoken)
                try:
                    async for chunk in chunks:
                        if chunk.text_only:
                            log.warning("no TTS could speak %r: %s", chunk.text[:40], "; ".join(chunk.errors))
                            continue
                        if resampler is None or resampler.in_rate != chunk.rate:
                            if resampler is not None:
                                await queue.put(("frames", await self._encode(reply, resampler, b"", True)))
                            resampler = Resampler(chunk.rate, self.rate)
                        await queue.put(("frames", await self._encode(reply, resampler, chunk.pcm, False)))
                finally:
                    await close_stream(chunks)
                if resampler is not None:
                    await queue.put(("frames", await self._encode(reply, resampler, b"", True)))
                await queue.put(("end", text))
        finally:
            # Cancelled (barge-in) while the sentences wait at a yield: they
            # are closed now, never by the garbage collector (close_stream).
            await close_stream(sentences)
            await queue.put((_END, None))

    async def speak(self, sentences: AsyncIterator[str], handle: Reply | None = None) -> bool:
        """True when everything was spoken and has played; False if cancelled.

        handle: the reply (pipeline/reply.py) these sentences are; nothing is
        sent until its gate is True (synthesis starts at once), if the gate
        turns False it is dropped unheard, and it gets its first frame's time."""
        gate = handle.gate if handle is not None else None
        reply = self._current = _Reply(self.rate, self._send_audio, self.lead_frames, self.record)
        self.pacer = reply.pacer
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=16)
        language = handle.turn.language if handle is not None and handle.turn is not None else None
        reply.producer = asyncio.create_task(self._produce(reply, sentences, queue, language))
        started = False
        try:
            while True:
                kind, item = await queue.get()
                if kind is _END:
                    break
                if reply.pacer.cancelled:
                    return False
                if kind == "start":
                    if not started:
                        if gate is not None and not await asyncio.shield(gate):
                            return False
                        started = True
                        self.speaking = True
                        await self._send_json(proto.tts(proto.TTS_START, session_id=self.session_id))
                    await self._send_json(proto.tts(proto.TTS_SENTENCE_START, session_id=self.session_id, text=item))
                elif kind == "frames":
                    for frame in item:
                        if not await reply.pacer.send(frame):
                            return False
                        if handle is not None and handle.first_audio_at is None:
                            handle.first_audio_at = time.monotonic()
                elif kind == "end":
                    await self._send_json(proto.tts(proto.TTS_SENTENCE_END, session_id=self.session_id, text=item))
            p = reply.producer
            if p.done() and not p.cancelled() and p.exception():
                raise p.exception()
            if not started:
                return True
            if not await reply.pacer.drain():
                return False
            await self._send_json(proto.tts(proto.TTS_STOP, session_id=self.session_id))
            return True
        finally:
            if not reply.producer.done():
                reply.producer.cancel()
                try:
                    await reply.producer
                except (asyncio.CancelledError, Exception):
                    pass
            if self._current is reply:
                self.speaking = False
                self._current = None
            if self.on_reply_end is not None:
                self.on_reply_end(reply.pacer)

    async def say(self, text: str) -> bool:
        """Speak one fixed text (an opener, an error line)."""
        async def one():
            yield text
        return await self.speak(one())
