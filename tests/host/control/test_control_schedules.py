"""Schedules: stored in SQLite, sent as SET_ALARM / UNSET_ALARM on cmd/ctl,
their state following the device's acks."""
import logging
import time

from testkit.control_api import eventually
from testkit.mqtt_device import MqttDevice
from testkit.postgres import BOTH_STORES
from xiaozhi_server import protocol as proto

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3", "repeat": 2}}


def path(device_id, alarm_id=None):
    return "/api/devices/%s/schedules%s" % (device_id, "/" + alarm_id if alarm_id else "")


async def test_add_list_delete_round_trip(api, device, device_id):
    status, s = await api.post(path(device_id), {"time": "07:30", "days": [1, 3, 5], "pending_task": LESSON}, wait=5)
    assert status == 201, s
    topic, request = await device.next_request()
    assert topic == proto.topic(proto.TOPIC_CMD_CTL, device_id)
    assert request["action"] == proto.ACTION_SET_ALARM
    assert request["payload"] == {"alarm_id": s["alarm_id"], "time": "07:30", "days": [1, 3, 5], "pending_task": LESSON}
    assert s["state"] == "active" and s["last_ack"]["code"] == proto.ACK_ACCEPTED

    at = int(time.time()) + 3600
    status, once = await api.post(path(device_id), {"alarm_id": "morning_once", "at": at, "pending_task": LESSON}, wait=5)
    assert status == 201 and once["alarm_id"] == "morning_once" and once["at"] == at
    await device.next_request()

    status, listed = await api.get(path(device_id))
    assert status == 200
    assert [(x["alarm_id"], x["state"]) for x in listed["schedules"]] == [(s["alarm_id"], "active"), ("morning_once", "active")]

    status, deleted = await api.delete(path(device_id, "morning_once"), wait=5)
    assert status == 200 and deleted["state"] == "deleted"
    _, request = await device.next_request()
    assert request["action"] == proto.ACTION_UNSET_ALARM and request["payload"] == {"alarm_id": "morning_once"}
    assert deleted["last_ack"]["action"] == proto.ACTION_UNSET_ALARM

    _, listed = await api.get(path(device_id))
    assert [x["alarm_id"] for x in listed["schedules"]] == [s["alarm_id"]]
    status, one = await api.get(path(device_id, "morning_once"))
    assert status == 200 and one["state"] == "deleted"
    status, err = await api.delete(path(device_id, "morning_once"))
    assert status == 404


async def test_a_refused_alarm_is_marked_failed_with_the_reason(api, device, device_id):
    device.answer = lambda r: proto.mqtt_ack(r["header"]["req_id"], False, proto.ACK_FAILED,
                                             "the RTC did not answer", reason="rtc_error")
    status, s = await api.post(path(device_id), {"time": "08:00", "pending_task": LESSON}, wait=5)
    assert status == 201 and s["state"] == "failed"
    assert s["last_ack"]["reason"] == "rtc_error"


async def test_without_an_ack_the_schedule_stays_pending(api, device, device_id):
    device.answer = lambda r: None
    status, s = await api.post(path(device_id), {"time": "08:00", "pending_task": LESSON}, wait=0.3)
    assert status == 201 and s["state"] == "pending_ack" and s["last_ack"] is None


async def test_unknown_schedule_is_404(api, device_id):
    status, err = await api.get(path(device_id, "nothing_here"))
    assert status == 404 and err["error"]["code"] == "not_found"
    status, err = await api.delete(path(device_id, "nothing_here"))
    assert status == 404


async def test_an_existing_alarm_id_is_a_conflict(api, device, device_id):
    body = {"alarm_id": "bedtime", "time": "20:00", "pending_task": LESSON}
    assert (await api.post(path(device_id), body))[0] == 201
    await device.next_request()
    status, err = await api.post(path(device_id), body)
    assert status == 409 and "bedtime" in err["error"]["message"]
    assert await device.no_request(0.3)


async def test_invalid_schedules_are_refused_naming_the_field(api, device, device_id):
    cases = [
        ({"time": "25:00", "pending_task": LESSON}, "time"),
        ({"at": int(time.time()) + 60, "days": [1], "pending_task": LESSON}, "days"),
        ({"pending_task": LESSON}, "exactly one of at"),
        ({"time": "07:00", "days": [8], "pending_task": LESSON}, "days"),
        ({"time": "07:00"}, "pending_task"),
        ({"time": "07:00", "pending_task": {"app_id": "karaoke", "task_id": "sing"}}, "pending_task.app_id"),
        ({"time": "07:00", "pending_task": dict(LESSON, params={"repeat": 2})}, "pending_task.params"),
        ({"at": 1000, "pending_task": LESSON}, "past"),
        ({"alarm_id": "Bad-Id", "time": "07:00", "pending_task": LESSON}, "alarm_id"),
    ]
    for body, field in cases:
        status, err = await api.post(path(device_id), body)
        assert status == 400, (body, err)
        assert field in err["error"]["message"], (body, err)
    assert await device.no_request(0.3)
    assert (await api.get(path(device_id)))[1]["schedules"] == []


async def test_malformed_and_stray_acks_are_logged_and_ignored(api, device, device_id, caplog):
    caplog.set_level(logging.WARNING, logger="xiaozhi_server.control")
    device.answer = lambda r: None
    status, s = await api.post(path(device_id), {"time": "09:00", "pending_task": LESSON})
    await device.next_request()
    ack_topic = proto.topic(proto.TOPIC_RPT_ACK, device_id)
    await device.publish_raw(ack_topic, b"{not json")
    await device.publish_raw(ack_topic, proto.encode({"req_id": s["last_req_id"], "ok": "yes", "code": "accepted", "message": "x"}).encode())
    await device.publish_ack(proto.mqtt_ack("r-never-sent", True, proto.ACK_ACCEPTED, "ok"))
    await eventually(lambda: sum("ignored" in r.getMessage() for r in caplog.records) >= 3)
    assert any("not valid JSON" in r.getMessage() for r in caplog.records)
    assert any("ack.ok" in r.getMessage() for r in caplog.records)
    assert any("r-never-sent" in r.getMessage() for r in caplog.records)
    _, still = await api.get(path(device_id, s["alarm_id"]))
    assert still["state"] == "pending_ack" and still["last_ack"] is None
    # The server keeps working: a proper ack still lands.
    await device.publish_ack(proto.mqtt_ack(s["last_req_id"], True, proto.ACK_ACCEPTED, "alarm set"))
    await eventually(lambda: _state(api, device_id, s["alarm_id"], "active"))


async def _state(api, device_id, alarm_id, state):
    _, s = await api.get(path(device_id, alarm_id))
    return s["state"] == state


async def test_an_ack_from_another_device_does_not_count(api, device, device_id):
    device.answer = lambda r: None
    _, s = await api.post(path(device_id), {"time": "09:00", "pending_task": LESSON})
    async with await MqttDevice.provisioned(api.server, device_id + "x") as other:
        await other.publish_ack(proto.mqtt_ack(s["last_req_id"], True, proto.ACK_ACCEPTED, "not mine"))
        await device.no_request(0.3)
    assert await _state(api, device_id, s["alarm_id"], "pending_ack")


async def test_state_reports_show_on_the_device_view(api, device, device_id):
    await device.publish_state(proto.mqtt_state(device_id, proto.STATE_SPEAKING, active_app_id="english_learning",
                                                active_task_id="repeater", source=proto.SOURCE_SCHEDULE))
    await device.publish_raw(proto.topic(proto.TOPIC_RPT_STATE, device_id), b'{"state": "dancing"}')

    async def reported():
        _, d = await api.get("/api/devices/%s" % device_id)
        return d["state"]
    state = await eventually(reported)
    assert state["report"]["state"] == proto.STATE_SPEAKING
    assert state["report"]["active_task_id"] == "repeater"


@BOTH_STORES
async def test_schedules_survive_a_server_restart(start_control, device_id):
    api = await start_control(db_name="kept.db")
    async with await MqttDevice.provisioned(api.server, device_id):
        _, s = await api.post(path(device_id), {"time": "06:45", "pending_task": LESSON}, wait=5)
    await api.server.stop()
    again = await start_control(db_name="kept.db")
    _, listed = await again.get(path(device_id))
    assert [(x["alarm_id"], x["state"], x["time"]) for x in listed["schedules"]] == [(s["alarm_id"], "active", "06:45")]
