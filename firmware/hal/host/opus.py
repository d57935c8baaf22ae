# Opus for the host simulation under CPython (opuslib + Debian libopus0).
# The MicroPython unix port has no Opus: there the sim uses pre-encoded
# frame files, and these functions raise a clear error.
try:
    import opuslib
except ImportError:
    opuslib = None


def available():
    return opuslib is not None


def _need():
    if opuslib is None:
        raise OSError("Opus is not available on this interpreter: "
                      "use pre-encoded Opus frame files")


def encode_pcm(pcm, rate=16000, frame_ms=60):
    """Split 16-bit mono PCM into Opus frames (the last one zero-padded)."""
    _need()
    enc = opuslib.Encoder(rate, 1, opuslib.APPLICATION_VOIP)
    step = rate * frame_ms // 1000 * 2
    frames = []
    for i in range(0, len(pcm), step):
        chunk = pcm[i:i + step]
        if len(chunk) < step:
            chunk = chunk + bytes(step - len(chunk))
        frames.append(enc.encode(chunk, step // 2))
    return frames


class Decoder:
    def __init__(self, rate=24000, frame_ms=60):
        _need()
        self._dec = opuslib.Decoder(rate, 1)
        # enough room for the longest Opus frame (120 ms)
        self._max = rate * 120 // 1000

    def decode(self, frame):
        return self._dec.decode(bytes(frame), self._max)
