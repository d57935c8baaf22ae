"""End-of-turn detection on 16 kHz PCM, on top of a VAD stream.

Speech starts after `min_speech_ms` of windows scoring at least
`threshold`; it ends after `silence_ms` of windows scoring below
`off_threshold` (the lower second threshold keeps soft word endings
inside the utterance). This class's default 300 ms silence lets most
pauses between words and at commas (typically 100-250 ms) pass; the
listener uses a shorter one (`vad.silence_ms`, 160 ms) because its end of
turn is only speculative and the words join again if the child goes on
(pipeline/listener.py). `pre_roll_ms` of audio
before the detected start is kept, because the VAD fires a little after
the first syllable begins. An utterance longer than `max_utterance_s` is
ended anyway.

`feed(pcm)` (async: the VAD thread judges the windows of all streams
together) or `feed_sync(pcm)` (blocking, one window at a time) returns
TurnEvents: "start", then "end" carrying the utterance PCM.
`at_ms` is the stream position (ms of audio fed so far) where the decision
was made. One detector serves one audio stream.
"""
import numpy as np


RATE = 16000


class TurnEvent:
    __slots__ = ("kind", "audio", "at_ms", "forced")

    def __init__(self, kind: str, at_ms: int, audio: bytes | None = None, forced: bool = False) -> None:
        self.kind = kind
        self.at_ms = at_ms
        self.audio = audio
        self.forced = forced

    def __repr__(self):
        n = len(self.audio) // 2 if self.audio else 0
        return "TurnEvent(%s at %d ms, %d samples)" % (self.kind, self.at_ms, n)


class EndOfTurnDetector:
    def __init__(self, vad_stream, threshold=0.5, off_threshold=0.35, min_speech_ms=96,
                 silence_ms=300, pre_roll_ms=300, max_utterance_s=30):
        self.vad = vad_stream
        self.window = vad_stream.window
        win_ms = self.window * 1000.0 / RATE
        self.threshold = threshold
        self.off_threshold = off_threshold
        self.min_speech = max(1, int(round(min_speech_ms / win_ms)))
        self.silence = max(1, int(round(silence_ms / win_ms)))
        self.pre_roll = int(round(pre_roll_ms / win_ms))
        self.max_windows = int(max_utterance_s * 1000 / win_ms)
        self._pending = np.zeros(0, dtype="<i2")
        self._history = []  # recent windows while idle: pre-roll plus the speech run
        self._utterance = bytearray()
        self._samples = 0
        self.speaking = False
        self._run = 0       # consecutive speech windows while idle
        self._quiet = 0     # consecutive quiet windows while speaking
        self._windows = 0   # windows in the current utterance

    @property
    def onset(self) -> bool:
        """Speech-like windows are being counted (not yet enough for a start)."""
        return not self.speaking and self._run > 0

    def reset(self):
        self.vad.reset()
        self._pending = np.zeros(0, dtype="<i2")
        self._history = []
        self._utterance = bytearray()
        self.speaking = False
        self._run = self._quiet = self._windows = 0

    def _at_ms(self):
        return self._samples * 1000 // RATE

    @property
    def position_ms(self) -> int:
        """Audio judged so far (ms): where the next event would be decided."""
        return self._at_ms()

    def utterance_since(self, offset: int) -> bytes:
        """The open utterance's audio (pre-roll included) from byte `offset` on;
        b"" while no one speaks. A streaming ASR is fed from it as it grows."""
        return bytes(self._utterance[offset:]) if self.speaking else b""

    def take(self, pcm):
        """Cut PCM into whole VAD windows (the rest waits for the next call):
        (float32 [k, window] scaled to [-1, 1], int16 [k * window]). Blocking numpy
        work, cheap enough for the decode thread."""
        samples = np.frombuffer(pcm, dtype="<i2")
        if len(self._pending):
            samples = np.concatenate((self._pending, samples))
        w = self.window
        whole = len(samples) // w * w
        self._pending = samples[whole:].copy()
        raw = samples[:whole]
        return (raw.astype(np.float32) * (1.0 / 32768.0)).reshape(-1, w), raw

    def judge(self, probs, raw):
        """TurnEvents from the VAD's verdicts on the windows `take` cut."""
        events = []
        w = self.window
        for k, p in enumerate(probs):
            self._samples += w
            event = self._step(float(p), raw[k * w:(k + 1) * w].tobytes())
            if event is not None:
                events.append(event)
        return events

    def feed_sync(self, pcm: bytes) -> list[TurnEvent]:
        """Blocking: judge each window now, one model call per window."""
        _windows, raw = self.take(pcm)
        probs = [self.vad.probability(raw, k * self.window) for k in range(len(raw) // self.window)]
        return self.judge(probs, raw)

    async def feed(self, pcm: bytes) -> list[TurnEvent]:
        """Windows cut and judged in the VAD thread, with other streams' in one model call."""
        probs, raw = await self.vad.judge_after(lambda: self.take(pcm))
        return self.judge(probs, raw)

    def _step(self, p, win):
        if not self.speaking:
            self._history.append(win)
            if len(self._history) > self.pre_roll + self.min_speech:
                del self._history[0]
            self._run = self._run + 1 if p >= self.threshold else 0
            if self._run >= self.min_speech:
                self.speaking = True
                self._utterance = bytearray(b"".join(self._history))
                self._history = []
                self._quiet = 0
                self._windows = self._run
                return TurnEvent("start", self._at_ms())
            return None
        self._utterance += win
        self._windows += 1
        self._quiet = self._quiet + 1 if p < self.off_threshold else 0
        if self._quiet >= self.silence:
            return self._finish(False)
        if self._windows >= self.max_windows:
            return self._finish(True)
        return None

    def _finish(self, forced):
        audio = bytes(self._utterance)
        self._utterance = bytearray()
        self.speaking = False
        self._run = self._quiet = self._windows = 0
        return TurnEvent("end", self._at_ms(), audio, forced)
