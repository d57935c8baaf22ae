# Power-off standby: one path for the self.power_off tool and for the end
# of a repeat with power_off_after.
#
#   power.request("repeat_done")     # from anywhere, returns at once
#   cause = await power.wait()       # the main loop waits for a request
#   await power.enter(cause)         # does not return
#
# Entering standby turns the wake word and offline command words off, runs
# the shutdown hooks (stop the player, say goodbye on the channel), tells
# the listeners, then hands over to the HAL: on the board deep sleep with
# only the DS3231 INT line as wake source; on the host the process exits
# with status 0 and power.json records the cause. A request is handled
# after the tool's reply had a moment to reach the server.
import asyncio

import log
import proto

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

REPLY_GRACE_MS = const(100)  # real ms: let the tool result leave the socket

_log = log.get("power")


class PowerPath:
    def __init__(self, board, bus=None):
        self._board = board
        self._bus = bus
        self._ev = asyncio.Event()
        self.cause = None
        self.hooks = []  # async callables run before the board sleeps

    def request(self, cause):
        if cause not in proto.STANDBY_CAUSES:
            raise ValueError("unknown standby cause %r" % (cause,))
        if self.cause is None:
            self.cause = cause
            _log.info("standby requested: %s", cause)
        self._ev.set()

    async def wait(self):
        await self._ev.wait()
        return self.cause

    async def enter(self, cause):
        await asyncio.sleep(REPLY_GRACE_MS / 1000)
        self._board.voice.enable(False)  # wake word and command words off
        for hook in self.hooks:
            try:
                await hook()
            except Exception as e:
                _log.error("shutdown hook failed: %r", e)
        if self._bus is not None:
            self._bus.emit("standby", cause=cause)
        _log.info("entering standby (%s); only the RTC alarm wakes the board", cause)
        self._board.power.standby(cause)
