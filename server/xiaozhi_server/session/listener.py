"""Hearing the user: Opus frames -> PCM -> VAD end of turn -> ASR text.

Frames are queued as they arrive and worked off by one task, a batch at a
time, so the receive loop never waits on the VAD or ASR (both run in the
thread pool). There is no deaf window: frames are heard from the first one
after `listen start` or a wake word, and speech that starts while the
server speaks is reported (`on_speech_start`) so the session can barge in.

Modes: auto and realtime end a turn on silence; manual ends it on
`listen stop` (push to talk), whatever the VAD says.
"""
import asyncio
import collections
import logging
import time

from ..pipeline.opus import OpusDecoder
from ..pipeline.turn import EndOfTurnDetector
from ..providers.workers import run_blocking

log = logging.getLogger(__name__)

MAX_QUEUED_FRAMES = 200   # 12 s of audio; beyond that the device is flooding us
MAX_MANUAL_BYTES = 30 * 32000   # push to talk keeps at most 30 s


class Utterance:
    __slots__ = ("text", "audio_ms", "ended_at", "asr_ms")

    def __init__(self, text, audio_ms, ended_at, asr_ms):
        self.text = text
        self.audio_ms = audio_ms
        self.ended_at = ended_at   # time.monotonic() when the end of speech was decided
        self.asr_ms = asr_ms


class Listener:
    def __init__(self, vad_provider, asr, on_speech_start, on_utterance, vad_config=None, language=None):
        self.asr = asr
        self.language = language
        self._on_start = on_speech_start
        self._on_utterance = on_utterance
        self._vad_provider = vad_provider
        self._vad_cfg = dict(vad_config or {})
        self.detector = None            # built on first audio, in the pool (~50 ms)
        self.decoder = OpusDecoder()
        self.mode = "auto"
        self.active = False
        self._frames = collections.deque()
        self._wake = asyncio.Event()
        self._task = None
        self._asr_tasks = set()
        self._manual = bytearray()     # push to talk: everything since listen start
        self._manual_speech = False
        self.dropped = 0

    def start(self, mode="auto"):
        self.mode = mode or "auto"
        self.active = True
        self._manual = bytearray()
        self._manual_speech = False
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    async def stop(self):
        """listen stop: in manual mode the turn ends now with what was said."""
        self.active = False
        await self._drain_queue()
        if self.mode == "manual":
            if self.detector is not None:
                self.detector.reset()
            if self._manual_speech:
                self._finish_audio(bytes(self._manual))
            self._manual = bytearray()
            self._manual_speech = False

    def push(self, packet):
        """One upstream Opus packet (bytes or memoryview)."""
        if not self.active:
            return
        if len(self._frames) >= MAX_QUEUED_FRAMES:
            self.dropped += 1
            return
        self._frames.append(bytes(packet))
        self._wake.set()

    async def _ensure_detector(self):
        if self.detector is None:
            stream = await run_blocking(self._vad_provider.open)
            cfg = self._vad_cfg
            self.detector = EndOfTurnDetector(stream, threshold=cfg.get("threshold", 0.5),
                                              silence_ms=cfg.get("silence_ms", 300))
        return self.detector

    async def _drain_queue(self):
        while self._frames:
            await self._process_batch()

    def _decode_and_detect(self, packets, detector, keep_manual):
        """Blocking (in the pool): decode a batch and run the VAD over it, so
        the event loop makes no codec call per frame."""
        pcm = bytearray()
        for packet in packets:
            try:
                pcm += self.decoder.decode(packet)
            except Exception as e:  # one corrupt packet must not deafen the session
                log.info("undecodable Opus packet (%d bytes): %s", len(packet), e)
        if keep_manual and len(self._manual) + len(pcm) <= MAX_MANUAL_BYTES:
            self._manual += pcm
        return detector.feed_sync(bytes(pcm)) if pcm else []

    async def _process_batch(self):
        packets = []
        while self._frames:
            packets.append(self._frames.popleft())
        if not packets:
            return
        manual = self.mode == "manual"
        detector = await self._ensure_detector()
        for ev in await run_blocking(self._decode_and_detect, packets, detector, manual):
            if ev.kind == "start":
                self._manual_speech = True
                await self._on_start()
            elif ev.kind == "end" and not manual:
                self._finish_audio(ev.audio)

    def _finish_audio(self, audio):
        t = asyncio.create_task(self._transcribe(audio, time.monotonic()))
        self._asr_tasks.add(t)
        t.add_done_callback(self._asr_tasks.discard)

    async def _transcribe(self, audio, ended_at):
        t0 = time.monotonic()
        try:
            text = await self.asr.transcribe(audio, language=self.language)
        except Exception:
            log.exception("ASR failed")
            return
        asr_ms = (time.monotonic() - t0) * 1000
        text = (text or "").strip()
        log.info("heard %r (%.1f s of audio, ASR %.0f ms)", text, len(audio) / 32000, asr_ms)
        if text:
            await self._on_utterance(Utterance(text, len(audio) // 32, ended_at, asr_ms))

    async def _run(self):
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._process_batch()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("audio processing failed; listening goes on")

    async def close(self):
        for t in [self._task, *self._asr_tasks]:
            if t is not None:
                t.cancel()
        for t in [self._task, *self._asr_tasks]:
            if t is not None:
                try:
                    await t
                except (asyncio.CancelledError, Exception):
                    pass
        self._task = None
