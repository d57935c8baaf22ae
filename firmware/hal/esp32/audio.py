# Board I2S through the xzaudio C module (firmware/lib/audio.py): the mic
# yields Opus packets, the speaker takes them; same API as hal.host.audio.
# start_engine() starts the C engine in the board profile's I2S mode
# (duplex, TDM from an ES7210, or simplex mic + amplifier) before the
# first stream is made.
import time

import asyncio

import audio
from hal import profile as profiles
from hal.amp import SPEAKER

FRAME_MS = 60
_DMA_MS = 240  # what the I2S DMA and decode queue hold ahead of the ear
_started = []


def start_engine(profile):
    """Start the engine once, wired as the profile says."""
    if not _started:
        import xzaudio
        xzaudio.start(**profiles.engine_args(profile))
        _started.append(True)


class Mic:
    def __init__(self, sample_rate=16000, frame_ms=FRAME_MS):
        self.sample_rate = sample_rate
        self.frame_ms = frame_ms
        self._in = audio.AudioIn(sample_rate, frame_ms)
        self._running = False

    def start(self):
        self._in.start()
        self._running = True

    def stop(self):
        self._in.stop()
        self._running = False

    async def read_frame(self, buf):
        """Copy the next Opus packet into buf; returns its length."""
        if not self._running:
            self.start()
        return await self._in.read_packet(buf)


class Speaker:
    # frontend: the board's codecs (lib/codec); when a codec sets the
    # volume the engine plays at full scale, as stock xiaozhi boards do.
    # amp: the board's amplifier power (hal/amp.py), held from a reply's
    # first frame to its end.
    def __init__(self, sample_rate=24000, frame_ms=FRAME_MS, frontend=None, amp=None):
        self._amp = amp
        self._sounding = False
        self.sample_rate = sample_rate
        self.frame_ms = frame_ms
        self.volume = 70
        self._fe = frontend if frontend is not None and frontend.hw_volume else None
        self._out = audio.AudioOut(sample_rate)
        self.set_volume(self.volume)
        self._play_until = time.ticks_ms()

    def configure(self, sample_rate, frame_ms=FRAME_MS):
        if sample_rate != self.sample_rate:
            self._out = audio.AudioOut(sample_rate)
            self.set_volume(self.volume)
        self.sample_rate = sample_rate
        self.frame_ms = frame_ms

    def set_volume(self, volume):
        self.volume = max(0, min(100, int(volume)))
        if self._fe is not None:
            self._fe.set_volume(self.volume)
            self._out.set_volume(100)
        else:
            self._out.set_volume(self.volume)

    def begin_reply(self):
        pass

    def end_reply(self):
        if self._sounding:
            self._sounding = False
            self._amp.release(SPEAKER)
        return None

    async def write_frame(self, frame):
        if not self._sounding and self._amp is not None:
            self._amp.hold(SPEAKER)
            self._sounding = True
        await self._out.play_wait(frame)
        now = time.ticks_ms()
        if time.ticks_diff(self._play_until, now) < 0:
            self._play_until = now
        self._play_until = time.ticks_add(self._play_until, self.frame_ms)

    async def drain(self):
        """Wait until what was written has been heard (estimated from the
        frame count: the C side does not report its queue depth)."""
        left = time.ticks_diff(self._play_until, time.ticks_ms())
        if left > 0:
            await asyncio.sleep_ms(left + _DMA_MS // 4)
