"""A lesson set 40 days ahead, the board powered off, and the simulator's
way of sleeping it until its DS3231 alarm (tools/simkit/alarm_clock.py
reads the saved chip registers with the HAL's model, like --wake-on-alarm):
the chip's day-of-month match must not wake the board into the lesson a
month early. Every early wake goes straight back to standby; the lesson
plays on its date."""
import pytest

from entry_rig import LESSONS
from simkit import alarm_clock
from testkit.control_api import eventually
from xiaozhi_server import protocol as proto

pytestmark = pytest.mark.timeout(180)

DAY = 86400
LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": LESSONS[1], "repeat": 1}}


async def test_a_lesson_40_days_ahead_plays_on_its_date_after_early_wakes_go_back_to_sleep(rig):
    fw = await rig.boot("cpython")
    await rig.chatting(fw)
    await fw.send("warp 0")
    at = (await fw.wait_event("warp"))["time"] + 40 * DAY
    status, body = await rig.add_schedule({"alarm_id": "far", "at": at, "pending_task": LESSON})
    assert body["last_ack"]["ok"] is True, body
    text, is_error = await rig.session().mcp.call("self.power_off", {})
    assert not is_error, text
    assert await fw.wait_exit(20) == 0

    early_wakes = 0
    while True:
        wait = alarm_clock.seconds_to_alarm(str(rig.state_dir))
        assert wait is not None, "the board sleeps with no alarm armed while its lesson waits"
        fw = await rig.boot("cpython", speed=1, args=("--advance", str(wait + 1)))
        boot = await fw.wait_event("boot", timeout=20)
        assert boot["wake_cause"] == "alarm"
        assert boot["pending"]["alarm_id"] == "far"
        # Either the alarm is due (fired) or the board goes back to standby.
        await eventually(lambda: fw.find("alarm", what="fired") or fw.find("standby"), 20)
        fired = fw.find("alarm", what="fired")
        if fired:
            break
        # Woken before the date: no lesson, no chat, straight back to standby.
        assert await fw.wait_exit(20) == 0
        assert fw.find("standby", cause=proto.STANDBY_POWER_OFF)
        assert not fw.find("task") and not fw.find("player")
        assert not [e for e in fw.find("state") if e["state"] in ("connecting", "listening")]
        early_wakes += 1
        assert early_wakes <= 2, "a wake about every four weeks"
    assert fired[0]["at"] >= at, "the lesson's alarm fired %d s early" % (at - fired[0]["at"])
    await fw.wait_event("player", state="playing", name=LESSONS[1], timeout=20)
    task = await fw.wait_event("task", app_id="english_learning")
    assert (task["source"], task["outcome"]) == (proto.SOURCE_SCHEDULE, proto.ACK_ACCEPTED), task
    assert early_wakes == 1, "40 days: one wake after 27 days, then the date itself"
    await fw.stop()
