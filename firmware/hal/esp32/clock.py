# Board clock: time.ticks_* for monotonic ms, the ESP32 RTC for wall time.
#
# Wall time is Unix seconds whatever epoch the port uses (MicroPython boards
# have used 2000 as time.time()'s epoch), converted with hal.civil.
import time

import asyncio
import machine

from hal import civil

_EPOCH_SHIFT = 946684800 if time.gmtime(0)[0] == 2000 else 0


class Clock:
    def __init__(self):
        self._rtc = machine.RTC()

    def ticks_ms(self):
        return time.ticks_ms()

    def ticks_diff(self, a, b):
        return time.ticks_diff(a, b)

    def ticks_add(self, a, delta):
        return time.ticks_add(a, delta)

    def time(self):
        return time.time() + _EPOCH_SHIFT

    def set_time(self, secs):
        y, mo, d, h, mi, s, wd = civil.from_epoch(int(secs))
        # machine.RTC.datetime: (year, month, day, weekday 0=Mon, h, m, s, subsec)
        self._rtc.datetime((y, mo, d, wd - 1, h, mi, s, 0))

    def warp(self, seconds):
        raise OSError("time warp exists only in the host simulation")

    async def sleep_ms(self, ms):
        await asyncio.sleep_ms(ms)
