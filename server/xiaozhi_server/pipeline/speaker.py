"""Speaking to one device: sentences -> TTS -> 24 kHz -> Opus -> paced frames.

`speak(sentences)` takes an async iterator of sentences and sends, in
order: `tts start` (once), then per sentence `sentence_start` (the
subtitle), its audio frames paced in real time, `sentence_end`; finally,
after the last frame has had time to play, `tts stop`. Synthesis of the
next sentence overlaps the playing of the current one, so there is no gap
between sentences. A sentence no TTS provider can render is still sent as
its subtitle: nothing said is lost.

`cancel()` (barge-in) stops the frames within one frame time and makes
`speak` return False; the caller decides what to send then (tts stop).
"""
import asyncio
import logging
import time

from .. import protocol as proto
from ..providers.workers import run_blocking
from .emotion import strip_emoji
from .opus import OpusEncoder
from .pacer import Pacer
from .resample import DEVICE_RATE, Resampler

log = logging.getLogger(__name__)

_END = object()


class Speaker:
    def __init__(self, tts, send_json, send_audio, session_id, lead_frames=3, rate=DEVICE_RATE):
        self.tts = tts
        self._send_json = send_json
        self.session_id = session_id
        self.rate = rate
        self.encoder = OpusEncoder(rate)
        self.pacer = Pacer(send_audio, frame_ms=60, lead_frames=lead_frames)
        self.speaking = False
        self.first_frame_at = None   # monotonic time the reply's first frame left
        self._producer = None

    def cancel(self):
        self.pacer.cancel()
        if self._producer is not None:
            self._producer.cancel()

    @property
    def cancelled(self):
        return self.pacer.cancelled

    async def _encode(self, resampler, pcm, last):
        def work():
            out = resampler.process(pcm) if pcm else b""
            if last:
                out += resampler.flush()
            frames = self.encoder.encode(out)
            if last:
                frames += self.encoder.flush()
            return frames
        return await run_blocking(work)

    async def _produce(self, sentences, queue):
        """Synthesize each sentence into ("start", text) ("frames", [..]) ("end", text) items."""
        try:
            async for text in sentences:
                spoken = strip_emoji(text).strip()
                if not spoken:
                    continue
                await queue.put(("start", text))
                resampler = None
                async for chunk in self.tts.stream(spoken):
                    if chunk.text_only:
                        log.warning("no TTS could speak %r: %s", chunk.text[:40], "; ".join(chunk.errors))
                        continue
                    if resampler is None or resampler.in_rate != chunk.rate:
                        if resampler is not None:
                            await queue.put(("frames", await self._encode(resampler, b"", True)))
                        resampler = Resampler(chunk.rate, self.rate)
                    await queue.put(("frames", await self._encode(resampler, chunk.pcm, False)))
                if resampler is not None:
                    await queue.put(("frames", await self._encode(resampler, b"", True)))
                await queue.put(("end", text))
        finally:
            await queue.put((_END, None))

    async def speak(self, sentences):
        """True when everything was spoken and has played; False if cancelled.
        Each call is a new reply: a cancel of the previous one is lifted."""
        self.pacer.reset()
        self.encoder.reset()
        self.first_frame_at = None
        queue = asyncio.Queue(maxsize=16)
        self._producer = asyncio.create_task(self._produce(sentences, queue))
        started = False
        try:
            while True:
                kind, item = await queue.get()
                if kind is _END:
                    break
                if self.pacer.cancelled:
                    return False
                if kind == "start":
                    if not started:
                        started = True
                        self.speaking = True
                        await self._send_json(proto.tts(proto.TTS_START, session_id=self.session_id))
                    await self._send_json(proto.tts(proto.TTS_SENTENCE_START, session_id=self.session_id, text=item))
                elif kind == "frames":
                    for frame in item:
                        if not await self.pacer.send(frame):
                            return False
                        if self.first_frame_at is None:
                            self.first_frame_at = time.monotonic()
                elif kind == "end":
                    await self._send_json(proto.tts(proto.TTS_SENTENCE_END, session_id=self.session_id, text=item))
            if self._producer.done() and not self._producer.cancelled() and self._producer.exception():
                raise self._producer.exception()
            if not started:
                return True
            if not await self.pacer.drain():
                return False
            await self._send_json(proto.tts(proto.TTS_STOP, session_id=self.session_id))
            return True
        finally:
            self.speaking = False
            if not self._producer.done():
                self._producer.cancel()
                try:
                    await self._producer
                except (asyncio.CancelledError, Exception):
                    pass
            self._producer = None

    async def say(self, text):
        """Speak one fixed text (an opener, an error line)."""
        async def one():
            yield text
        return await self.speak(one())
