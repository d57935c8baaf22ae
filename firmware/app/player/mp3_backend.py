# Where an SD MP3 is really decoded: one small interface, two backends.
#
#   b = backend_for(board)
#   b.on_end = fn         # called once per natural end of the file
#   b.play(path); b.pause(); b.resume(); b.stop()
#
# Both hold the board's amplifier (hal/amp.py, board.amp) while a pass
# plays and release it when it pauses, stops or ends.
#
# Board: the xzaudio C module decodes on its own task (audio.Mp3Player,
# which reads the file through MicroPython's VFS, where the SD card is
# mounted, and feeds it); its MP3_END event is the natural end. Host: nothing is decoded; the file
# "plays" for its real duration (from its frame headers, lib/mp3info) on
# the HAL clock, so a fast simulated clock makes tests quick while pauses
# and resumes keep the exact position. stop() never calls on_end.
import asyncio

import audio
import log
from hal.amp import MP3

_log = log.get("mp3")


def _sound(amp, on):
    """A pass starts (on) or pauses, stops, ends: the amplifier follows."""
    if amp is not None:
        if on:
            amp.hold(MP3)
        else:
            amp.release(MP3)


class ClockMp3:
    """Host backend: a pass lasts the file's duration on the board clock."""

    def __init__(self, clock, duration_ms=audio.mp3_duration_ms, amp=None):
        self._clock = clock
        self._amp = amp
        self._duration = duration_ms
        self._task = None
        self._left = 0
        self._since = 0
        self.on_end = None
        self.path = None

    def play(self, path):
        self.stop()
        self.path = path
        self._left = self._duration(path)
        self._run()

    def _run(self):
        _sound(self._amp, True)
        self._since = self._clock.ticks_ms()
        self._task = asyncio.create_task(self._wait(self._left))

    async def _wait(self, ms):
        await self._clock.sleep_ms(ms)
        self._task = None
        self._left = 0
        _sound(self._amp, False)
        if self.on_end is not None:
            self.on_end()

    def _halt(self):
        t, self._task = self._task, None
        if t is not None:
            t.cancel()
            _sound(self._amp, False)
            return True
        return False

    def pause(self):
        if self._halt():
            gone = self._clock.ticks_diff(self._clock.ticks_ms(), self._since)
            self._left = max(0, self._left - gone)

    def resume(self):
        if self._task is None and self.path is not None:
            self._run()

    def stop(self):
        self._halt()
        self.path = None
        self._left = 0

    def position_left_ms(self):
        """Milliseconds of the current pass still to play (host only)."""
        if self._task is None:
            return self._left
        gone = self._clock.ticks_diff(self._clock.ticks_ms(), self._since)
        return max(0, self._left - gone)


class BoardMp3:
    """Board backend: decoding in C; a task turns its events into on_end."""

    def __init__(self, amp=None):
        self._p = audio.Mp3Player()
        self._amp = amp
        self._task = None
        self.on_end = None
        self.path = None

    def _watch(self):
        if self._task is None:
            self._task = asyncio.create_task(self._events())

    async def _events(self):
        while True:
            ev = await self._p.next_event()
            if ev in (audio.MP3_END, audio.MP3_ERROR):
                _sound(self._amp, False)
            if ev == audio.MP3_END and self.on_end is not None:
                self.on_end()
            elif ev == audio.MP3_ERROR:
                _log.error("decoder error on %s", self.path)

    def play(self, path):
        self._watch()
        self.path = path
        _sound(self._amp, True)
        self._p.play(path)

    def pause(self):
        self._p.pause()
        _sound(self._amp, False)

    def resume(self):
        _sound(self._amp, True)
        self._p.resume()

    def stop(self):
        self.path = None
        self._p.stop()
        _sound(self._amp, False)


def backend_for(board):
    # A board whose clock is simulated (the host HAL: --speed, warp) keeps
    # the pass on that clock, even where the C decoder exists (the unix
    # build's plays in real time).
    amp = getattr(board, "amp", None)
    if hasattr(audio, "Mp3Player") and not getattr(board, "mp3_on_clock", False):
        return BoardMp3(amp)
    return ClockMp3(board.clock, amp=amp)
