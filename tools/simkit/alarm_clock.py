"""When the simulated board's DS3231 alarm fires next, read from its saved
registers (STATE/rtc.json) with the HAL's own chip model: the sim uses it
to wake a board in standby, as the alarm's INT line wakes the real one.

    seconds = seconds_to_alarm(state_dir)    # None: no alarm enabled
"""
import json
import os

from simkit import use_host_hal


def seconds_to_alarm(state_dir, horizon=86400 * 32):
    try:
        with open(os.path.join(state_dir, "rtc.json")) as f:
            saved = json.load(f)
    except (OSError, ValueError):
        return None
    use_host_hal()
    from hal.host.clock import HostClock
    from hal.host.ds3231_model import DS3231Model
    model = DS3231Model(HostClock(wall=saved["chip"]))
    model.load(saved, 0)
    return model.seconds_to_next_alarm(horizon)
