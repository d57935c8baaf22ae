"""A lesson that is not on the SD card: the parents hear why (ok false,
reason not_found), nothing plays, and the child is not locked out - the
wake word and the button open a conversation at once. An alarm whose
lesson is missing leaves the board in chat, with pending_task back at chat
and the parents told on rpt/state."""
import json

import pytest

from testkit.control_api import eventually
from xiaozhi_server import protocol as proto

pytestmark = pytest.mark.timeout(120)

MISSING = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson9.mp3", "repeat": 2}}


async def not_locked_out(rig, fw):
    """A wake word and a button each open a turn; nothing is refused as busy."""
    since = fw.mark()
    await fw.send("wake")
    await fw.wait_event("state", state="listening", since=since)
    since = fw.mark()
    await fw.send("button")       # listening: the button ends the turn
    await fw.wait_event("state", state="idle", since=since)
    await fw.send("button")       # idle: the button opens a turn
    await fw.wait_event("state", state="listening", since=since)
    assert not fw.find("task", outcome="refused", reason="busy"), fw.find("task")
    assert rig.active() == "chat.conversation"


async def test_parents_task_for_a_missing_lesson_is_refused_not_found_and_locks_nothing(rig):
    fw = await rig.boot("cpython", speed=1)
    await rig.chatting(fw)
    status, body = await rig.start_task(MISSING)
    assert status == 200, body
    ack = body["ack"]
    assert ack["ok"] is False and ack["code"] == proto.ACK_REFUSED, ack
    assert ack["reason"] == proto.TASK_NOT_FOUND and "lesson9.mp3" in ack["message"], ack
    assert "lesson1.mp3" in ack["message"], "the ack names what the card holds"
    task = await fw.wait_event("task", app_id="english_learning", source="mqtt_immediate")
    assert task["outcome"] == proto.ACK_REFUSED and task["reason"] == proto.TASK_NOT_FOUND
    assert not fw.find("player", state="playing")
    assert rig.active() == "chat.conversation"
    # The conversation the request interrupted listens again.
    await eventually(lambda: fw.find("state")[-1]["state"] == "listening", 10)
    await not_locked_out(rig, fw)
    # A lesson that is on the card still plays, and is acked as started.
    status, body = await rig.start_task(dict(MISSING, params={"name": "lesson1.mp3", "repeat": 1}))
    assert body["ack"]["ok"] is True, body
    await fw.wait_event("player", state="done", name="lesson1.mp3", timeout=30)
    await fw.stop()


async def test_raw_request_for_a_missing_lesson_is_acked_once_with_the_reason(rig):
    fw = await rig.boot("cpython")
    await rig.chatting(fw)
    req = rig.mqtt.request(proto.ACTION_START_APP_TASK, dict(MISSING, source=proto.SOURCE_MQTT_IMMEDIATE))
    await rig.mqtt.publish_raw(json.dumps(req).encode())
    ack = await rig.mqtt.ack_for(req["header"]["req_id"])
    assert (ack["ok"], ack["code"], ack["reason"]) == (False, proto.ACK_REFUSED, proto.TASK_NOT_FOUND), ack
    # Not kept for the next boot: it can never run.
    await fw.send("reboot")
    await fw.wait_exit(10)
    fw = await rig.boot("cpython")
    await rig.chatting(fw)
    assert not [e for e in fw.find("task") if e["app_id"] == "english_learning"]
    await fw.stop()


async def test_an_alarm_whose_lesson_is_missing_wakes_the_board_into_chat(rig):
    fw = await rig.boot("cpython")
    await rig.chatting(fw)
    await fw.send("warp 0")
    at = (await fw.wait_event("warp"))["time"] + 120
    status, body = await rig.add_schedule({"alarm_id": "gone", "at": at, "pending_task": MISSING})
    assert body["last_ack"]["ok"] is True, body
    text, is_error = await rig.session().mcp.call("self.power_off", {})
    assert not is_error, text
    assert await fw.wait_exit(20) == 0

    fw = await rig.boot("cpython", speed=1, args=("--advance", "130"))
    boot = await fw.wait_event("boot", timeout=20)
    assert boot["wake_cause"] == "alarm"
    await fw.wait_event("alarm", what="fired", alarm_id="gone")
    task = await fw.wait_event("task", app_id="english_learning", source="schedule", timeout=20)
    assert task["outcome"] == proto.ACK_REFUSED and task["reason"] == proto.TASK_NOT_FOUND, task
    await fw.wait_event("mqtt", action="CONNECT", timeout=20)
    report = await eventually(lambda: [s for s in rig.mqtt.states if s.get("event") == "alarm_failed"], 20)
    assert "gone" in report[0]["message"] and "lesson9.mp3" in report[0]["message"], report
    await fw.wait_event("state", state="listening", timeout=20)   # chat, not a locked board
    assert not fw.find("player", state="playing")
    assert rig.pending()["app_id"] == "chat", "the one-shot's pending task is cleaned up"
    await rig.server_in("chat.conversation")
    await not_locked_out(rig, fw)
    await fw.stop()
