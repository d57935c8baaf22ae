# Simulated clock: monotonic ms and wall time that tests can run fast.
#
# Simulated time = real time elapsed x `speed` + every warp() so far.
# Sleepers wake as soon as a warp moves their deadline into the past, so a
# test can jump over two minutes without waiting for them.
# Limit: on MicroPython the real tick counter wraps after ~6 days of one run.
import time

import asyncio

if hasattr(time, "ticks_ms"):
    _T0 = time.ticks_ms()

    def _real_ms():
        return time.ticks_diff(time.ticks_ms(), _T0)

    async def _wait(ev, ms):
        try:
            await asyncio.wait_for_ms(ev.wait(), max(1, int(ms)))
        except asyncio.TimeoutError:
            pass
else:
    _T0 = time.monotonic()

    def _real_ms():
        return (time.monotonic() - _T0) * 1000

    async def _wait(ev, ms):
        try:
            await asyncio.wait_for(ev.wait(), max(0.001, ms / 1000))
        except asyncio.TimeoutError:
            pass


def host_time():
    """The host's own Unix time in seconds (the world outside the sim)."""
    return int(time.time())


class HostClock:
    def __init__(self, wall=None, speed=1):
        self.speed = speed
        self._real0 = _real_ms()
        self._warp_ms = 0
        self._wall_base = host_time() if wall is None else int(wall)
        self._sim_at_base = 0
        self._sleepers = []
        self._on_warp = []

    # monotonic, like time.ticks_ms (but never wraps on the host)
    def ticks_ms(self):
        return int((_real_ms() - self._real0) * self.speed) + self._warp_ms

    def ticks_diff(self, a, b):
        return a - b

    def ticks_add(self, a, delta):
        return a + delta

    # wall time, Unix seconds
    def time(self):
        return self._wall_base + (self.ticks_ms() - self._sim_at_base) // 1000

    def set_time(self, secs):
        self._wall_base = int(secs)
        self._sim_at_base = self.ticks_ms()

    def warp(self, seconds):
        """Advance simulated time at once (host only)."""
        self._warp_ms += int(seconds * 1000)
        for ev in self._sleepers:
            ev.set()
        for cb in self._on_warp:
            cb()

    def on_warp(self, cb):
        self._on_warp.append(cb)

    async def sleep_ms(self, ms):
        deadline = self.ticks_ms() + int(ms)
        while True:
            left = deadline - self.ticks_ms()
            if left <= 0:
                return
            ev = asyncio.Event()
            self._sleepers.append(ev)
            try:
                await _wait(ev, left / self.speed)
            finally:
                self._sleepers.remove(ev)
