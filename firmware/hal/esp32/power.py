# Board power: soft power-off is deep sleep woken only by the DS3231 INT
# line (EXT0, level low, on an RTC GPIO); the wake cause comes from
# machine.reset_cause() / machine.wake_reason().
import esp32
import machine

_EXT0 = getattr(machine, "EXT0_WAKE", getattr(machine, "PIN_WAKE", 2))
_EXT1 = getattr(machine, "EXT1_WAKE", 3)


class Power:
    def __init__(self, rtc_int_pin, before_sleep=None):
        self._int = rtc_int_pin
        self._before_sleep = before_sleep  # turn off amp, mic, Wi-Fi first
        self._cause = self._read_cause()

    def _read_cause(self):
        rc = machine.reset_cause()
        if rc == machine.DEEPSLEEP_RESET:
            wr = machine.wake_reason()
            if wr == _EXT0:
                return "alarm"
            if wr == _EXT1:
                return "button"
            return "power_on"
        if rc == machine.PWRON_RESET:
            return "power_on"
        return "reset"  # hard/soft/watchdog resets

    def wake_cause(self):
        return self._cause

    def standby(self, cause="power_off"):
        """Deep sleep until the RTC alarm pulls INT low. Does not return."""
        if self._before_sleep is not None:
            self._before_sleep(cause)
        if self._int is not None:  # a board without the INT wire sleeps until reset
            esp32.wake_on_ext0(pin=self._int, level=esp32.WAKEUP_ALL_LOW)
        machine.deepsleep()

    def reset(self):
        machine.reset()
