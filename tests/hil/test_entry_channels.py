"""The board's entry channels: an alarm set from the parents' app wakes the
board from standby into its pending lesson, and a parents' MQTT command
preempts a lesson started by voice (docs/runtime.md, start_app_task:
mqtt_immediate 3 > voice 1)."""
import time

import pytest

from parents_app import ParentsApp
from testkit.fake_llm import Turn
from test_repeater import ask_for_lesson


def require_entry_channels(console, target, what):
    target.need_sim(what)
    boot = console.seen(0, "boot", timeout=30)
    if "pending" not in boot:
        pytest.skip("%s: the firmware's boot event carries no 'pending' task, so boot resolution, alarms "
                    "and MQTT are not wired into the device yet (firmware/app/device.py)" % what)
    console.seen(0, "mqtt", action="CONNECT", ok=True, timeout=15)
    return boot


def test_alarm_wakes_the_board_into_its_pending_lesson(console, target):
    require_entry_channels(console, target, "an alarm wake")
    console.opener_heard()
    with ParentsApp(target.broker.port, target.device_id) as app:
        req = app.send("SET_ALARM", {"alarm_id": "hil_lesson", "at": int(time.time()) + 600, "pending_task": {
            "app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3", "repeat": 2}}})
        assert app.ack(req)["ok"] is True
    console.event("alarm", alarm_id="hil_lesson", what="set", timeout=10)
    # Every request ending with the child's words, whatever the ASR heard: a reply
    # prepared at a pause and dropped when the child went on would take a queued
    # answer (pipeline/listener.py, the speculative end).
    target.llm.answer("", Turn(tool_calls=[("self_power_off", {})]))
    console.send("say Good night, please turn off.")
    console.event("standby", cause="power_off", timeout=40)
    console.event("sleep", timeout=10)
    boot = console.event("boot", timeout=30)
    assert boot["wake_cause"] == "alarm"
    assert (boot["pending"] or {}).get("task_id") == "repeater"
    mark = len(console.events)
    console.event("player", state="done", timeout=30)
    since = console.events[mark:]  # the task line and the first player line come in either order
    tasks = [e for e in since if e["event"] == "task" and e["source"] == "schedule"]
    assert [(t["app_id"], t["outcome"]) for t in tasks] == [("english_learning", "accepted")]
    passes = [(e["name"], e["pass"], e["repeat_left"]) for e in since
              if e["event"] == "player" and e["state"] == "pass_end"]
    assert passes == [("lesson1.mp3", 1, 1), ("lesson1.mp3", 2, 0)]


def test_parents_command_preempts_a_lesson_started_by_voice(console, target):
    require_entry_channels(console, target, "MQTT preemption")
    ask_for_lesson(console, target, 3)
    assert console.event("player", state="playing", timeout=30)["name"] == "lesson1.mp3"
    mark = len(console.events)
    with ParentsApp(target.broker.port, target.device_id) as app:
        req = app.send("START_APP_TASK", {"app_id": "english_learning", "task_id": "repeater",
                                          "params": {"name": "lesson2.mp3", "repeat": 1},
                                          "source": "mqtt_immediate"})
        console.event("mqtt", action="START_APP_TASK", req_id=req, ok=True, timeout=15)
        ack = app.ack(req)
    assert ack["ok"] is True and ack["code"] == "accepted"
    # the order of the task, player and ack lines is the device's business
    assert console.seen(mark, "task", source="mqtt_immediate")["outcome"] == "accepted"
    console.seen(mark, "player", state="stopped", name="lesson1.mp3")
    console.seen(mark, "player", state="playing", name="lesson2.mp3")
    console.event("player", state="done", timeout=15)
    console.send("status")
    assert console.event("status", timeout=10)["repeat_left"] == 0  # lesson1's passes left were dropped
