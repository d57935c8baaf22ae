"""Any provider sample rate to the 24 kHz the device plays (soxr, int16 mono).

`Resampler` is for a stream of chunks (keeps filter state across calls,
`flush()` at the end); `resample_once` converts one whole buffer.
"""
import numpy as np
import soxr

DEVICE_RATE = 24000


class Resampler:
    def __init__(self, in_rate: int, out_rate: int = DEVICE_RATE, quality: str = "HQ") -> None:
        self.in_rate = in_rate
        self.out_rate = out_rate
        self._stream = None if in_rate == out_rate else soxr.ResampleStream(
            in_rate, out_rate, 1, dtype="int16", quality=quality)

    def process(self, pcm: bytes) -> bytes:
        if self._stream is None:
            return bytes(pcm)
        samples = np.frombuffer(pcm, dtype="<i2")
        return self._stream.resample_chunk(samples, last=False).tobytes()

    def flush(self) -> bytes:
        if self._stream is None:
            return b""
        return self._stream.resample_chunk(np.zeros(0, dtype="<i2"), last=True).tobytes()


def resample_once(pcm: bytes, in_rate: int, out_rate: int = DEVICE_RATE) -> bytes:
    if in_rate == out_rate:
        return bytes(pcm)
    samples = np.frombuffer(pcm, dtype="<i2")
    return soxr.resample(samples, in_rate, out_rate).astype("<i2").tobytes()
