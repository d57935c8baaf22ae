# Host power: standby and reset end the process; the next run learns why.
#
# standby() writes power.json {"event": "standby", "cause", "wake_on": "rtc"}
# into the state directory, saves the battery-backed parts, and exits the
# process with status 0 (SystemExit, so `finally` blocks still run, like
# the board's shutdown hooks). The next boot (HostBoard) turns that record
# into wake_cause(): "alarm" when the DS3231 INT line is asserted (the
# alarm fell due while off), else "power_on"; reset() gives "reset".
import json

from hal.host import fs

from proto import WAKE_CAUSES  # the schema's own list


def read_record(state_dir):
    return fs.read_json(fs.join(state_dir, "power.json"))


def resolve_wake_cause(record, rtc_int_low, forced=None):
    """What woke the board, from the last run's record and the INT line."""
    if forced is not None:
        if forced not in WAKE_CAUSES:
            raise ValueError("wake cause must be one of %s" % (WAKE_CAUSES,))
        return forced
    if record is None:
        return "power_on"
    if record.get("event") == "reset":
        return "reset"
    if record.get("event") == "standby" and rtc_int_low:
        return "alarm"
    return "power_on"


class HostPower:
    def __init__(self, state_dir, clock, wake_cause, save, exit_fn=None, before_sleep=None):
        self._before_sleep = before_sleep  # codecs and amplifier off, as on the board
        self._state_dir = state_dir
        self._clock = clock
        self._wake_cause = wake_cause
        self._save = save
        self._exit = exit_fn or _exit
        self.last_record = None

    def wake_cause(self):
        return self._wake_cause

    def _record(self, rec):
        rec["at"] = self._clock.time()
        self.last_record = rec
        self._save()
        fs.write_atomic(fs.join(self._state_dir, "power.json"), json.dumps(rec).encode())

    def standby(self, cause="power_off"):
        """Soft power-off: only the RTC alarm (INT low) wakes the board."""
        if self._before_sleep is not None:
            self._before_sleep(cause)
        self._record({"event": "standby", "cause": cause, "wake_on": "rtc"})
        self._exit(0)

    def reset(self):
        self._record({"event": "reset", "cause": "reset"})
        self._exit(0)


def _exit(code):
    raise SystemExit(code)
