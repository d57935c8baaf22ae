"""Audio bodies of HTTP speech services to PCM: raw PCM, WAV (also a
streamed WAV whose header gives no length), and compressed formats
(MP3, Opus, AAC, FLAC) through PyAV, which faster-whisper already brings.

Self-hosted OpenAI-compatible speech servers differ in what they send:
some answer WAV or MP3 whatever `response_format` asked, some stream a
WAV with its length fields 0 or 0xFFFFFFFF, some write float samples or
stereo. `sniff` tells the body's format from its first bytes, so the
reader never trusts the request alone.
"""
import struct

import numpy as np

from .audio import AudioChunk


class AudioFormatError(ValueError):
    """The body is not audio we can read."""


def sniff(head: bytes, expect_pcm: bool = False) -> str:
    """"wav", "mp3", "ogg", "flac", "aac" or "pcm" (anything else) from a body's
    first bytes. With `expect_pcm` only whole magic words count: raw samples
    can begin like a bare MPEG frame sync."""
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "wav"
    if head[:3] == b"ID3":
        return "mp3"
    if not expect_pcm and len(head) > 1 and head[0] == 0xFF and head[1] & 0xE6 == 0xE2:
        return "mp3"   # an MPEG audio layer III frame sync
    if head[:4] == b"OggS":
        return "ogg"
    if head[:4] == b"fLaC":
        return "flac"
    if not expect_pcm and len(head) > 1 and head[0] == 0xFF and head[1] & 0xF6 == 0xF0:
        return "aac"   # ADTS
    if head.lstrip()[:1] in (b"<", b"{"):
        raise AudioFormatError("an HTML or JSON body, not audio: %r" % head[:60])
    return "pcm"


def to_mono16(samples: bytes, channels: int, width: int, is_float: bool) -> bytes:
    """Interleaved frames to mono int16 little-endian."""
    if is_float:
        data = np.frombuffer(samples, dtype="<f4" if width == 4 else "<f8")
        data = np.clip(data * 32768.0, -32768, 32767).astype(np.int32)
    elif width == 2:
        data = np.frombuffer(samples, dtype="<i2").astype(np.int32)
    else:
        raise AudioFormatError("WAV with %d-byte integer samples is not supported" % width)
    if channels > 1:
        data = data.reshape(-1, channels).sum(axis=1) // channels
    return data.astype("<i2").tobytes()


class WavStream:
    """Reads a WAV body piece by piece: `feed(bytes)` returns the mono int16
    PCM it completes (b"" until the header is read); `rate` once it is."""

    def __init__(self) -> None:
        self._pending = bytearray()
        self.rate: int | None = None
        self._fmt: tuple[int, int, bool] | None = None   # channels, bytes per sample, float
        self._left: int | None = None       # data bytes still to come; None = to the end
        self._in_data = False

    def feed(self, data: bytes) -> bytes:
        self._pending += data
        if not self._in_data and not self._read_header():
            return b""
        assert self._fmt is not None
        channels, width, is_float = self._fmt
        frame = channels * width
        take = len(self._pending) - len(self._pending) % frame
        if self._left is not None:
            take = min(take, self._left - self._left % frame)
            self._left -= take
        out = bytes(self._pending[:take])
        del self._pending[:take]
        if self._left is not None and self._left < frame:
            self._pending.clear()   # chunks after the data (LIST, id3) are not audio
        return to_mono16(out, channels, width, is_float) if out else b""

    def _read_header(self) -> bool:
        buf = self._pending
        if len(buf) < 12:
            return False
        if buf[:4] != b"RIFF" or buf[8:12] != b"WAVE":
            raise AudioFormatError("not a WAV body: %r" % bytes(buf[:12]))
        pos = 12
        while len(buf) >= pos + 8:
            chunk, size = buf[pos:pos + 4], struct.unpack("<I", buf[pos + 4:pos + 8])[0]
            if chunk == b"data":
                if self._fmt is None:
                    raise AudioFormatError("WAV data before its fmt chunk")
                # A streamed WAV gives 0 or 0xFFFFFFFF: the data runs to the end.
                self._left = None if size in (0, 0xFFFFFFFF) else size
                del buf[:pos + 8]
                self._in_data = True
                return True
            if len(buf) < pos + 8 + size:
                return False
            if chunk == b"fmt ":
                tag, channels, rate = struct.unpack("<HHI", buf[pos + 8:pos + 16])
                bits = struct.unpack("<H", buf[pos + 22:pos + 24])[0]
                if tag == 0xFFFE and size >= 40:   # WAVE_FORMAT_EXTENSIBLE: the real tag leads the GUID
                    tag = struct.unpack("<H", buf[pos + 32:pos + 34])[0]
                if tag not in (1, 3) or channels < 1:
                    raise AudioFormatError("WAV format %d with %d channels is not PCM we read" % (tag, channels))
                self.rate = rate
                self._fmt = (channels, bits // 8, tag == 3)
            pos += 8 + size + (size & 1)
        return False


def decode_compressed(data: bytes) -> AudioChunk:
    """MP3, Ogg/Opus, AAC or FLAC bytes to one mono int16 chunk at the stream's rate (blocking)."""
    import io

    import av
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if not container.streams.audio:
                raise AudioFormatError("no audio stream in the body")
            stream = container.streams.audio[0]
            rate = stream.codec_context.sample_rate or stream.rate
            resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
            pcm = bytearray()
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    pcm += out.to_ndarray().tobytes()
            for out in resampler.resample(None):
                pcm += out.to_ndarray().tobytes()
    except av.error.FFmpegError as exc:
        raise AudioFormatError("could not decode the audio: %s" % exc)
    if not pcm:
        raise AudioFormatError("the body held no audio")
    return AudioChunk(bytes(pcm), rate)


class Mp3Stream:
    """Decodes an MP3 body piece by piece (Edge's read-aloud service streams
    MP3 frames over its WebSocket): `feed(bytes)` returns the mono int16 PCM
    of the frames it completes, `flush()` what the decoder still holds;
    `rate` once the first frame is decoded. Blocking (PyAV), a few ms a
    second of audio: call it through the thread pool."""

    def __init__(self) -> None:
        import av
        self._codec = av.CodecContext.create("mp3", "r")
        self._resampler = av.AudioResampler(format="s16", layout="mono")
        self.rate: int | None = None

    def feed(self, data: bytes) -> bytes:
        import av
        pcm = bytearray()
        try:
            for packet in self._codec.parse(data):
                for frame in self._codec.decode(packet):
                    pcm += self._resample(frame)
        except av.error.FFmpegError as exc:
            raise AudioFormatError("could not decode the MP3 stream: %s" % exc)
        return bytes(pcm)

    def flush(self) -> bytes:
        import av
        pcm = bytearray()
        try:
            for packet in self._codec.parse(b""):
                for frame in self._codec.decode(packet):
                    pcm += self._resample(frame)
            for frame in self._codec.decode(None):
                pcm += self._resample(frame)
        except av.error.FFmpegError as exc:
            raise AudioFormatError("could not decode the MP3 stream: %s" % exc)
        for out in self._resampler.resample(None):
            pcm += out.to_ndarray().tobytes()
        return bytes(pcm)

    def _resample(self, frame) -> bytes:
        if self.rate is None:
            self.rate = frame.sample_rate
        return b"".join(out.to_ndarray().tobytes() for out in self._resampler.resample(frame))
