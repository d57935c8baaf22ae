"""The broker goes away and comes back: immediate requests fail fast with
503, the server keeps serving, schedules stay stored and are sent again."""
import asyncio

from testkit.control_api import eventually
from testkit.mosquitto import Mosquitto
from testkit.mqtt_device import MqttDevice
from xiaozhi_server import protocol as proto
from xiaozhi_server.control import plane

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}


async def test_outage_gives_503_and_unacked_schedules_are_sent_again(api):
    broker = api.server.broker
    link = api.server.control.link
    dev = "kid_room"
    sched = "/api/devices/%s/schedules" % dev

    # The device gets the first alarm but its ack never comes back.
    async with await MqttDevice.provisioned(api.server, dev, answer=lambda r: None) as device:
        status, first = await api.post(sched, {"alarm_id": "first", "time": "07:00", "pending_task": LESSON})
        assert status == 201
        await device.next_request()
        await broker.stop()
        await eventually(lambda: not api.server.control.broker_connected)

    status, err = await api.post("/api/devices/%s/tasks" % dev, LESSON, wait=5)
    assert status == 503 and err["error"]["code"] == "broker_unavailable"
    assert "not reachable" in err["error"]["message"]

    status, err = await api.post(sched, {"alarm_id": "second", "time": "19:00", "pending_task": LESSON})
    assert status == 503 and err["schedule"]["state"] == "pending_ack"
    assert "stored" in err["error"]["message"]

    # Still serving everything that needs no broker.
    async with api.http.get(api.base + "/health") as r:
        assert r.status == 200
    status, listed = await api.get(sched)
    assert status == 200 and [s["alarm_id"] for s in listed["schedules"]] == ["first", "second"]

    # A request is sent again once it has had RESEND_AFTER_S to be acked
    # (another node may have sent it a moment ago).
    await asyncio.sleep(plane.RESEND_AFTER_S)
    connects = link.connects
    await broker.start()
    await eventually(lambda: link.connects > connects, timeout=10)

    # On reconnect both unacked schedules go out again (one after the other:
    # wait for both, not for the first alone), the first with its own req_id
    # (its ack may only be late: the board runs a req_id once).
    async def resent():
        _, s = await api.get(sched + "/first")
        _, d = await api.get("/api/devices/%s" % dev)
        sent = {r["payload"]["alarm_id"] for r in d["recent_requests"]
                if r["action"] == proto.ACTION_SET_ALARM and r["sent_at"]}
        return s["last_req_id"] == first["last_req_id"] and sent == {"first", "second"}
    await eventually(resent)

    # The device comes online afterwards and reports: what it never acked reaches it.
    async with await MqttDevice.provisioned(api.server, dev) as device:
        await asyncio.sleep(plane.RESEND_AFTER_S + 0.1)
        await device.publish_state(proto.mqtt_state(dev, proto.STATE_IDLE))
        got = {(await device.next_request())[1]["payload"]["alarm_id"] for _ in range(2)}
        assert got == {"first", "second"}

        async def all_active():
            _, listed = await api.get(sched)
            return [s["state"] for s in listed["schedules"]] == ["active", "active"]
        await eventually(all_active)

        status, body = await api.post("/api/devices/%s/tasks" % dev, LESSON, wait=5)
        assert status == 200 and body["ack"]["ok"]


async def test_server_starts_without_a_broker_and_connects_when_it_appears(start_control):
    broker = Mosquitto()     # configured (mqtt.url: the operator's own broker), not running yet
    try:
        api = await start_control(broker_url=broker.url)
        status, err = await api.post("/api/devices/d1/tasks", LESSON)
        assert status == 503
        broker.start()
        await eventually(lambda: api.server.control.broker_connected, timeout=10)
        async with MqttDevice(broker.port, "d1") as device:
            status, body = await api.post("/api/devices/d1/tasks", LESSON, wait=5)
            assert status == 200 and body["ack"]["ok"]
    finally:
        broker.close()
