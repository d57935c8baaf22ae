# The audio API the firmware uses, the same on every interpreter:
#
#   enc = Encoder(16000, 60);  n = enc.encode(pcm, out)     # Opus packet -> out[:n]
#   dec = Decoder(24000);      n = dec.decode(packet, out)  # PCM bytes   -> out[:n]
#   mp3_duration_ms(path)
#
# Both codecs write into caller buffers and return the byte count, so the
# caller preallocates once and slices a memoryview per frame. Backends:
#   board (ESP32-S3): the `xzaudio` C module (codec runs in its own FreeRTOS
#     task with a large stack); also AudioIn / AudioOut / Mp3Player below.
#   MicroPython unix port built by `make micropython`: the same C module,
#     its I/O streams over a host engine (files/pipes for I2S, docs/firmware.md).
#   CPython host: opuslib over Debian libopus0, same settings, same bytes.
#   Any other MicroPython (pip's unix port): no Opus at all. The module
#     still imports; OPUS_AVAILABLE is False and constructing a codec raises
#     OpusUnavailable, so the simulator uses pre-encoded Opus frames there.
# Upstream settings (xiaozhi protocol): mono, VOIP, VBR, DTX, complexity 0.
from mp3info import mp3_duration_ms, mp3_info  # noqa: F401  re-exported

try:
    import xzaudio as _c
except ImportError:
    _c = None

_opuslib = None
if _c is None:
    try:
        import opuslib as _opuslib
        import opuslib.api.ctl as _ctl
        import opuslib.api.decoder as _api_dec
        import opuslib.api.encoder as _api_enc
    except ImportError:
        _opuslib = None

BACKEND = "xzaudio" if _c is not None else ("opuslib" if _opuslib is not None else None)
OPUS_AVAILABLE = BACKEND is not None
RATES = (8000, 12000, 16000, 24000, 48000)
FRAME_MS = (10, 20, 40, 60)


class OpusUnavailable(OSError):
    pass


def _need_opus():
    if not OPUS_AVAILABLE:
        raise OpusUnavailable("Opus is not available on this interpreter (no xzaudio "
                              "module, no opuslib): use pre-encoded Opus frames")


def _check(rate, frame_ms):
    if rate not in RATES:
        raise ValueError("unsupported Opus rate %d" % rate)
    if frame_ms not in FRAME_MS:
        raise ValueError("unsupported frame length %d ms" % frame_ms)


class Encoder:
    """One mono Opus encoder. encode() takes exactly one frame of int16 LE
    PCM (rate * frame_ms / 1000 samples) and returns the packet length."""

    def __init__(self, rate=16000, frame_ms=60):
        _need_opus()
        _check(rate, frame_ms)
        self.rate = rate
        self.frame_ms = frame_ms
        self.frame_samples = rate * frame_ms // 1000
        if _c is not None:
            self._e = _c.Encoder(rate, frame_ms)
        else:
            e = _opuslib.Encoder(rate, 1, "voip")
            e.vbr = 1
            e.complexity = 0
            # opuslib 3.0.1's `dtx` property setter sends GET_DTX: call the ctl.
            _api_enc.encoder_ctl(e.encoder_state, _ctl.set_dtx, 1)
            self._e = e

    def encode(self, pcm, out):
        if len(pcm) != self.frame_samples * 2:
            raise ValueError("need %d bytes of PCM, got %d" % (self.frame_samples * 2, len(pcm)))
        if _c is not None:
            return self._e.encode(pcm, out)
        pkt = self._e.encode(bytes(pcm), self.frame_samples)
        n = len(pkt)
        if n > len(out):
            raise ValueError("packet of %d bytes does not fit in %d" % (n, len(out)))
        out[:n] = pkt
        return n


class Decoder:
    """One mono Opus decoder at the rate the server announced. decode()
    writes int16 LE PCM into out and returns the byte count; a None or
    empty packet conceals one lost frame."""

    def __init__(self, rate=24000):
        _need_opus()
        _check(rate, 60)
        self.rate = rate
        self._last = rate * 60 // 1000
        if _c is not None:
            self._d = _c.Decoder(rate)
        else:
            self._d = _opuslib.Decoder(rate, 1)

    def decode(self, packet, out):
        if _c is not None:
            return self._d.decode(packet, out)
        cap = len(out) // 2
        if not packet:
            pcm = _api_dec.decode(self._d.decoder_state, None, 0, self._last, False, 1)
        else:
            pcm = self._d.decode(bytes(packet), cap)
            self._last = len(pcm) // 2
        n = len(pcm)
        if n > len(out):
            raise ValueError("decoded %d bytes do not fit in %d" % (n, len(out)))
        out[:n] = pcm
        return n


if hasattr(_c, "AudioIn"):
    # Builds with the audio engine (XZ_HAVE_IO) only. Each object is a non-blocking stream the asyncio core can
    # poll, so awaiting audio never blocks the MicroPython task.
    import asyncio
    from asyncio import core as _core

    class AudioIn:
        """Microphone as Opus packets (16 kHz, 60 ms): one packet per read."""

        def __init__(self, rate=16000, frame_ms=60):
            self._s = _c.AudioIn(rate, frame_ms)
            self._r = asyncio.StreamReader(self._s)

        def start(self):
            self._s.start()

        def stop(self):
            self._s.stop()

        async def read_packet(self, buf):
            """Waits for the next packet, copies it into buf, returns its length."""
            return await self._r.readinto(buf)

        def dropped(self):
            return self._s.stats()[0]

    class AudioOut:
        """Speaker fed with Opus packets; the C side decodes and plays.
        A full queue drops the packet (as the stock device does)."""

        def __init__(self, rate=24000):
            self._s = _c.AudioOut(rate)
            self._w = asyncio.StreamWriter(self._s, {})

        def play(self, packet):
            """Queues a packet without waiting; False when it was dropped."""
            return self._s.write(packet) is not None

        async def play_wait(self, packet):
            """Queues a packet, waiting for room instead of dropping it."""
            self._w.write(packet)
            await self._w.drain()

        def flush(self):
            self._s.flush()

        def set_volume(self, percent):
            self._s.volume(percent)

        def stats(self):
            return self._s.stats()

    MP3_END = _c.MP3_END
    MP3_STOPPED = _c.MP3_STOPPED
    MP3_ERROR = _c.MP3_ERROR

    MP3_CHUNK = _c.MP3_CHUNK

    class Mp3Player:
        """SD-card MP3 playback decoded in C. Events: MP3_END (a pass ended
        naturally), MP3_STOPPED, MP3_ERROR.

        The file is opened and read here, through MicroPython's VFS (the
        board mounts the card with os.mount, which the C side cannot see),
        and fed to the decoder by one task in MP3_CHUNK pieces from one
        buffer; a full decoder ring parks the task on the poller."""

        def __init__(self):
            self._p = _c.Mp3Player()
            self._r = asyncio.StreamReader(self._p)
            self._ev = bytearray(1)
            self._buf = bytearray(MP3_CHUNK)
            self._file = None
            self._more = asyncio.Event()
            self._feeder = None

        def play(self, path):
            """Plays the file at path from its start; a file that cannot be
            opened or read, or holds no MP3, ends with MP3_ERROR."""
            self._close()
            self._p.begin()
            try:
                self._file = open(path, "rb")
            except OSError:
                self._p.end(True)
                return
            # One task for the player's life, never cancelled: asyncio lets
            # one task wait to write on a stream, and cancelling it would
            # also drop the wait of next_event() on the same stream.
            if self._feeder is None or self._feeder.done():
                self._feeder = asyncio.create_task(self._feed())
            self._more.set()

        def _close(self):
            f, self._file = self._file, None
            if f is not None:
                f.close()

        # A coroutine is a generator in MicroPython: its bare `yield` of the
        # poller's write queue is how asyncio's own streams wait for room.
        async def _feed(self):
            buf = self._buf
            while True:
                f = self._file
                if f is None:
                    self._more.clear()
                    await self._more.wait()
                    continue
                try:
                    n = f.readinto(buf)
                except OSError:             # the card went away: MP3_ERROR
                    self._close()
                    self._p.end(True)
                    continue
                if not n:
                    self._close()
                    self._p.end(False)
                    continue
                k = self._p.feed(buf, n)
                while k is None:
                    yield _core._io_queue.queue_write(self._p)
                    if self._file is not f:
                        break               # stopped or replaced while waiting
                    k = self._p.feed(buf, n)
                if k == 0 and self._file is f:
                    self._close()           # stopped, or the decoder gave up

        def pause(self):
            self._p.pause()

        def resume(self):
            self._p.resume()

        def stop(self):
            self._close()
            self._p.stop()

        def state(self):
            return self._p.state()

        async def next_event(self):
            await self._r.readinto(self._ev)
            return self._ev[0]
