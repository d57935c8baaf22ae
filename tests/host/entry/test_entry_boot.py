"""Alarms, standby and boot resolution on the simulated board: a lesson set
over MQTT for two simulated minutes ahead, the board powered off by its own
tool, a plain reboot before the alarm (chat first), then the alarm wake
(the lesson first, no chat), and pending_task back to chat afterwards."""
import pytest

from testkit.control_api import eventually
from entry_rig import OPENER, UNIX_PORT
from xiaozhi_server import protocol as proto

pytestmark = pytest.mark.timeout(120)

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson2.mp3", "repeat": 2}}


async def device_time(fw):
    await fw.send("warp 0")
    return (await fw.wait_event("warp"))["time"]


async def power_off(rig, fw):
    text, is_error = await rig.session().mcp.call("self.power_off", {})
    assert not is_error, text
    assert await fw.wait_exit(20) == 0
    assert fw.find("standby", cause="power_off")


def before(fw, event, **fields):
    """The events that came before the first matching one."""
    i = fw.log.index(event, **fields)
    assert i is not None, "no %s %r" % (event, fields)
    return fw.events[:i]


@pytest.mark.parametrize("interp", ["cpython", UNIX_PORT])
async def test_alarm_two_minutes_ahead_wakes_the_board_into_the_lesson(rig, interp):
    fw = await rig.boot(interp)
    await rig.chatting(fw)
    at = await device_time(fw) + 120
    status, body = await rig.add_schedule({"alarm_id": "lesson_a", "at": at, "pending_task": LESSON})
    assert status in (200, 201), body
    assert body["state"] == "active" and body["last_ack"]["code"] == proto.ACK_ACCEPTED, body
    assert (await fw.wait_event("alarm", what="set"))["at"] == at
    pending = rig.pending()
    assert (pending["app_id"], pending["task_id"], pending["source"], pending["alarm_id"]) == \
        ("english_learning", "repeater", "schedule", "lesson_a")
    await power_off(rig, fw)

    # Off until the alarm: the runner wakes the board when the chip's INT
    # goes low, two simulated minutes later.
    fw = await rig.boot(interp, speed=1, args=("--advance", "130"))
    boot = await fw.wait_event("boot", timeout=20)
    assert boot["wake_cause"] == "alarm"
    await fw.wait_event("alarm", what="fired", alarm_id="lesson_a")
    await fw.wait_event("player", state="playing", name="lesson2.mp3", timeout=20)
    first = before(fw, "player", state="playing")
    assert not [e for e in first if e["event"] == "subtitle" and e["role"] == "assistant"], first
    assert not [e for e in first if e["event"] == "state" and e["state"] == "speaking"], first
    task = await fw.wait_event("task", app_id="english_learning")
    assert task["source"] == "schedule" and task["outcome"] == "accepted", task

    # The child's wake word does not reset an alarm's lesson.
    await fw.send("wake")
    refused = await fw.wait_event("task", app_id="chat", outcome="refused")
    assert "schedule" in refused["message"]
    await fw.wait_event("player", state="done", name="lesson2.mp3", timeout=20)
    assert [e["pass"] for e in fw.find("player", state="pass_end")] == [1, 2]
    assert not fw.find("player", state="stopped")
    assert not [e for e in fw.find("subtitle", role="assistant") if e["text"] == OPENER]
    # The lesson is over: the next boot is chat again.
    await eventually(lambda: rig.pending()["app_id"] == "chat", 10)
    assert rig.pending()["task_id"] == "conversation"
    await fw.stop()


async def test_plain_reboot_before_the_alarm_is_chat_spoken_first(rig):
    fw = await rig.boot("cpython")
    await rig.chatting(fw)
    at = await device_time(fw) + 600
    status, body = await rig.add_schedule({"alarm_id": "later", "at": at, "pending_task": LESSON})
    assert body["last_ack"]["code"] == proto.ACK_ACCEPTED, body
    await fw.send("reboot")
    await fw.wait_exit(10)

    fw = await rig.boot("cpython")
    boot = await fw.wait_event("boot")
    assert boot["wake_cause"] != "alarm"
    assert boot["pending"]["app_id"] == "english_learning"     # still waiting for its alarm
    said = await fw.wait_event("subtitle", role="assistant", timeout=20)
    assert said["text"] == OPENER
    assert not fw.find("player", state="playing")
    assert rig.active() == "chat.conversation"
    assert not [e for e in fw.find("task") if e["app_id"] != "chat"]
    await fw.stop()


async def test_wake_word_during_a_voice_lesson_returns_to_chat(rig):
    fw = await rig.boot("cpython", speed=1)
    await rig.chatting(fw)
    await fw.send("phrase 开始复读")
    await fw.wait_event("task", app_id="english_learning", source="voice", outcome="accepted")
    await fw.wait_event("player", state="playing", name="lesson1.mp3")   # the first MP3 on the card
    await rig.server_in("english_learning.repeater")
    await fw.send("wake")
    await fw.wait_event("player", state="stopped")
    await rig.server_in("chat.conversation")
    await fw.wait_event("state", state="listening", since=0)
    assert not fw.find("player", state="done")
    await fw.stop()
