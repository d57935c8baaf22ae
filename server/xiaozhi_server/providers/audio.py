"""Audio values that TTS providers hand to the pipeline."""
import io
import wave
from typing import Iterable


class AudioChunk:
    """Mono signed 16-bit little-endian PCM at `rate` Hz."""

    __slots__ = ("pcm", "rate")
    text_only = False

    def __init__(self, pcm: bytes, rate: int) -> None:
        self.pcm = pcm
        self.rate = rate

    @property
    def seconds(self) -> float:
        return len(self.pcm) / 2 / self.rate

    def __repr__(self):
        return "AudioChunk(%d bytes, %d Hz)" % (len(self.pcm), self.rate)


class TextOnly:
    """No provider could speak `text`: the caller shows it as a subtitle only.

    `errors` lists "provider: reason" strings, one per provider tried.
    """

    __slots__ = ("text", "errors")
    text_only = True

    def __init__(self, text: str, errors: Iterable[str]) -> None:
        self.text = text
        self.errors = list(errors)

    def __repr__(self):
        return "TextOnly(%r, errors=%r)" % (self.text, self.errors)


def wav_to_chunk(data: bytes) -> AudioChunk:
    """Parse WAV bytes into an AudioChunk (16-bit PCM; stereo is mixed down)."""
    with wave.open(io.BytesIO(data), "rb") as w:
        if w.getsampwidth() != 2:
            raise ValueError("WAV must be 16-bit PCM, got %d-byte samples" % w.getsampwidth())
        channels = w.getnchannels()
        rate = w.getframerate()
        pcm = w.readframes(w.getnframes())
    if channels == 2:
        import numpy as np
        s = np.frombuffer(pcm, dtype="<i2").reshape(-1, 2).astype(np.int32)
        pcm = ((s[:, 0] + s[:, 1]) // 2).astype("<i2").tobytes()
    elif channels != 1:
        raise ValueError("WAV with %d channels is not supported" % channels)
    return AudioChunk(pcm, rate)
