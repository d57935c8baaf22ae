"""Opus for the xiaozhi audio channel: 16 kHz 60 ms frames up, 24 kHz 60 ms frames down.

Needs Debian's libopus0 (through opuslib). Both classes reuse one buffer
per stream; one instance serves one stream and is not thread-safe.
Encoding 10 s of 24 kHz audio takes about 25 ms, so callers may encode a
sentence's frames in one go in the thread pool.
"""
import ctypes

import opuslib
import opuslib.api as _api
import opuslib.api.decoder as _dec
import opuslib.api.encoder as _enc

UP_RATE = 16000
DOWN_RATE = 24000
FRAME_MS = 60
_MAX_PACKET = 4000      # bytes; one 60 ms frame is ~240 at 32 kbit/s, libopus allows 1275 per 20 ms


def frame_samples(rate: int, frame_ms: int = FRAME_MS) -> int:
    return rate * frame_ms // 1000


class OpusDecoder:
    """Device frames to PCM (int16 little-endian mono); default 16 kHz, 60 ms."""

    def __init__(self, rate: int = UP_RATE, frame_ms: int = FRAME_MS) -> None:
        self.rate = rate
        self.frame = frame_samples(rate, frame_ms)
        self._dec = opuslib.Decoder(rate, 1)
        # One output buffer for every packet (opuslib allocates one per call).
        self._max = rate * 120 // 1000
        self._pcm = (ctypes.c_int16 * self._max)()
        self._ptr = ctypes.cast(self._pcm, _api.c_int16_pointer)
        self._bytes = memoryview(self._pcm).cast("B")

    def decode(self, packet: bytes | memoryview) -> bytes:
        """PCM bytes of one Opus packet (an empty packet means a lost frame: concealed)."""
        data = bytes(packet) if packet else None
        n = _dec.libopus_decode(self._dec.decoder_state, data, len(data) if data else 0,
                                self._ptr, self.frame if not data else self._max, 0)
        if n < 0:
            raise opuslib.OpusError(n)
        return bytes(self._bytes[:n * 2])


class OpusEncoder:
    """PCM of any length to fixed 60 ms Opus frames; default 24 kHz for the device's speaker.

    `encode(pcm)` returns the frames now complete; the remainder waits in a
    preallocated buffer for the next call, and `flush()` pads it with
    silence into a last frame.

    The reply is synthesized speech, not a live call: Opus's general audio
    mode (CELT at this rate and bitrate) codes it in about a third of the
    CPU time of the VoIP mode (SILK + CELT hybrid) at the same bitrate, and
    the device's full libopus decodes either. The input and output buffers
    are reused for every frame (opuslib allocates both per call).
    """

    def __init__(self, rate=DOWN_RATE, frame_ms=FRAME_MS, bitrate=32000, complexity=5):
        self.rate = rate
        self.frame = frame_samples(rate, frame_ms)
        self.frame_bytes = self.frame * 2
        self._enc = opuslib.Encoder(rate, 1, opuslib.APPLICATION_AUDIO)
        self._enc.bitrate = bitrate
        self._enc.complexity = complexity
        self._pcm = (ctypes.c_int16 * self.frame)()
        self._in = ctypes.cast(self._pcm, _api.c_int16_pointer)
        self._view = memoryview(self._pcm).cast("B")
        self._out = ctypes.create_string_buffer(_MAX_PACKET)
        self._fill = 0

    def _frame(self):
        n = _enc.libopus_encode(self._enc.encoder_state, self._in, self.frame, self._out, _MAX_PACKET)
        if n < 0:
            raise opuslib.OpusError(n)
        return ctypes.string_at(self._out, n)

    def encode(self, pcm: bytes | bytearray | memoryview) -> list[bytes]:
        frames = []
        src = memoryview(pcm).cast("B")
        pos = 0
        n = len(src) & ~1
        size = self.frame_bytes
        while pos < n:
            take = min(size - self._fill, n - pos)
            self._view[self._fill:self._fill + take] = src[pos:pos + take]
            self._fill += take
            pos += take
            if self._fill == size:
                frames.append(self._frame())
                self._fill = 0
        return frames

    def flush(self) -> list[bytes]:
        """The last partial frame padded with silence, or [] if nothing is pending."""
        if not self._fill:
            return []
        ctypes.memset(ctypes.addressof(self._pcm) + self._fill, 0, self.frame_bytes - self._fill)
        self._fill = 0
        return [self._frame()]

    def reset(self) -> None:
        """Drop pending audio (barge-in) so the next reply starts clean."""
        self._fill = 0
        self._enc.reset_state()
