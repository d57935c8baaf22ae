# The speaker amplifier's power: on before the first sound, off once the
# output has been idle for IDLE_MS. An amplifier left on hisses in a quiet
# room and draws current on battery; one switched per sentence clicks.
#
#   amp = Amp(switch, clock)     # switch(on): the board's enable line
#   amp.hold(SPEAKER)            # a reply's first frame, an MP3 pass starts
#   amp.release(SPEAKER)         # the reply ended: off after IDLE_MS unless held again
#   amp.shut()                   # standby: the board powers the front end down
#
# The board's switch runs the I2S clock before it turns the amplifier on
# (an unclocked DAC's start-up pop, amplified), as stock xiaozhi-esp32's
# EnableOutput does.
import asyncio

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

SPEAKER = const(1)   # replies and prompts (Opus through the speaker)
MP3 = const(2)       # the SD card player

# Stock xiaozhi-esp32's AUDIO_POWER_TIMEOUT_MS: longer than the gap between
# a reply's sentences and than a child's answer between two replies, so a
# conversation never clicks; short enough that a board left alone goes quiet.
IDLE_MS = const(15000)


class Amp:
    def __init__(self, switch, clock, idle_ms=IDLE_MS):
        self._switch = switch
        self._clock = clock
        self.idle_ms = idle_ms
        self.on = False        # the front end's open() leaves it off
        self._holders = 0      # SPEAKER | MP3: who is playing now
        self._idle_since = 0
        self._watch = None     # the task that switches off after IDLE_MS

    def hold(self, who):
        """`who` plays from now on: the amplifier is on before its sound."""
        self._holders |= who
        if not self.on:
            self._switch(True)
            self.on = True

    def release(self, who):
        """`who` stopped playing; with nobody else playing, the idle delay starts."""
        if not self._holders & who:
            return
        self._holders &= ~who
        if self._holders or not self.on:
            return
        self._idle_since = self._clock.ticks_ms()
        if self._watch is None:
            coro = self._off_when_idle()
            try:
                self._watch = asyncio.create_task(coro)
            except RuntimeError:
                # CPython with no event loop running (a host test ending a
                # reply by hand): nothing can wait, it stays on until the
                # next release. MicroPython queues the task in any case.
                coro.close()

    def shut(self):
        """The board switched it off itself (standby's power-down)."""
        self._holders = 0
        self.on = False

    async def _off_when_idle(self):
        # One task per idle spell: a hold() in between makes it end at its
        # next wake-up, a later release() moves the deadline it sleeps to.
        try:
            while self.on and not self._holders:
                left = self.idle_ms - self._clock.ticks_diff(self._clock.ticks_ms(), self._idle_since)
                if left <= 0:
                    self._switch(False)
                    self.on = False
                    return
                await self._clock.sleep_ms(left)
        finally:
            self._watch = None
