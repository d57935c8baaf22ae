"""A power cut past an alarm (the plug pulled, not standby): the DS3231
keeps time on its battery but cannot wake an unpowered board, so the next
boot is `power_on`. Within the grace window the lesson runs then; after it
the board boots into chat and the parents see the miss on the schedule
(rpt/state alarm_missed, kept by the control plane)."""
import signal

import pytest

from testkit.control_api import eventually
from entry_rig import DEVICE_ID

pytestmark = pytest.mark.timeout(120)

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson2.mp3", "repeat": 1}}


async def _cut_past_the_alarm(rig, late_s):
    fw = await rig.boot("cpython", alarm_grace_min=30)
    await rig.chatting(fw)
    await fw.send("warp 0")
    at = (await fw.wait_event("warp"))["time"] + 120
    status, body = await rig.add_schedule({"alarm_id": "seven", "at": at, "pending_task": LESSON})
    assert status in (200, 201) and body["state"] == "active", body
    fw.proc.send_signal(signal.SIGKILL)        # the plug, not the power-off tool
    await fw.proc.wait()
    fw = await rig.boot("cpython", speed=1, args=("--advance", str(120 + late_s)))
    boot = await fw.wait_event("boot", timeout=20)
    assert boot["wake_cause"] == "power_on"
    return fw, at


async def test_a_lesson_missed_past_the_grace_window_is_skipped_and_shown_on_the_schedule(rig):
    fw, at = await _cut_past_the_alarm(rig, 3 * 3600)
    missed = await fw.wait_event("alarm", what="missed", alarm_id="seven")
    assert missed["at"] == at and missed["late_s"] >= 3 * 3600
    await rig.chatting(fw)
    assert not fw.find("player", state="playing")

    async def shown():
        status, body = await rig.api.get("/api/devices/%s/schedules" % DEVICE_ID)
        assert status == 200, body
        return [s["missed"] for s in body["schedules"] if s["alarm_id"] == "seven" and "missed" in s]
    miss = (await eventually(shown, 20))[0]
    assert miss["at"] == at and miss["late_s"] >= 3 * 3600 and miss["grace_s"] == 1800
    await fw.stop()


async def test_a_lesson_missed_within_the_grace_window_runs_at_power_on(rig):
    fw, at = await _cut_past_the_alarm(rig, 10 * 60)
    await fw.wait_event("alarm", what="fired", alarm_id="seven")
    await fw.wait_event("player", state="playing", name="lesson2.mp3", timeout=20)
    assert not fw.find("alarm", what="missed")
    await fw.stop()
