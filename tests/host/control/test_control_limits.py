"""What one device, or a burst of API calls, can make the control plane do:
a storm of state reports re-sends only that device's unacked schedules,
once; a burst of task starts is paced (a bounded number waiting for acks,
a few queued, 429 with Retry-After for the rest); rows are pruned."""
import asyncio

from testkit.control_api import eventually
from testkit.mqtt_device import MqttDevice
from xiaozhi_server import protocol as proto
from xiaozhi_server.control import plane
from xiaozhi_server.store import store

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}


def schedules(device_id):
    return "/api/devices/%s/schedules" % device_id


async def test_a_report_storm_resends_only_that_devices_schedules_once(api, monkeypatch):
    monkeypatch.setattr(plane, "RESEND_AFTER_S", 0.0)   # any unacked request may go again at once
    silent = lambda r: None  # noqa: E731
    async with await MqttDevice.provisioned(api.server, "stormy", answer=silent) as dev, \
            await MqttDevice.provisioned(api.server, "quiet", answer=silent) as other:
        for i in range(3):
            assert (await api.post(schedules("stormy"), {"time": "07:0%d" % i, "pending_task": LESSON}))[0] == 201
        for i in range(2):
            assert (await api.post(schedules("quiet"), {"time": "08:0%d" % i, "pending_task": LESSON}))[0] == 201
        first = [(await dev.next_request())[1]["header"]["req_id"] for _ in range(3)]
        for _ in range(2):
            await other.next_request()

        for i in range(50):
            await dev.publish_state(proto.mqtt_state("stormy", proto.STATE_IDLE, message="report %d" % i))
        await dev.publish_state(proto.mqtt_state("stormy", proto.STATE_IDLE, message="last"))

        async def all_handled():
            _, d = await api.get("/api/devices/stormy")
            return d["state"] and d["state"]["report"].get("message") == "last" and api.server.control.link.idle()
        await eventually(all_handled)
        resent = [(await dev.next_request())[1] for _ in range(3)]
        assert sorted(r["payload"]["time"] for r in resent) == ["07:00", "07:01", "07:02"]
        assert dev.requests.empty(), "one round per interval, however many reports"
        assert other.requests.empty(), "another device's schedules are not re-sent by this one's reports"
        # The same requests again: a board that had them runs them once.
        assert sorted(r["header"]["req_id"] for r in resent) == sorted(first)
        _, d = await api.get("/api/devices/stormy")
        assert len(d["recent_requests"]) == 3


async def test_a_burst_of_task_starts_is_paced_and_the_rest_get_429(start_control):
    api = await start_control(max_in_flight=2, max_queued=3)
    async with await MqttDevice.provisioned(api.server, "busy", answer=lambda r: None) as dev:
        calls = [asyncio.ensure_future(api.post("/api/devices/busy/tasks", LESSON)) for _ in range(10)]
        first = [await dev.next_request() for _ in range(2)]

        async def refused():
            return sum(1 for c in calls if c.done() and c.result()[0] == 429) == 5
        await eventually(refused)
        [(_, err)] = [c.result() for c in calls if c.done() and c.result()[0] == 429][:1]
        assert err["error"]["code"] == "device_busy" and "waiting for acks" in err["error"]["message"]
        assert dev.requests.empty(), "the queued ones wait for a free slot"

        # Each ack frees a slot for one queued request.
        for _, req in first:
            await dev.publish_ack(proto.mqtt_ack(req["header"]["req_id"], True, proto.ACK_ACCEPTED, "ok",
                                                 device_id="busy"))
        for _ in range(3):
            _, req = await dev.next_request()
            await dev.publish_ack(proto.mqtt_ack(req["header"]["req_id"], True, proto.ACK_ACCEPTED, "ok",
                                                 device_id="busy"))
        statuses = sorted(status for status, _ in await asyncio.gather(*calls))
        assert statuses == [202] * 5 + [429] * 5


async def test_retry_after_is_sent_with_429(start_control):
    api = await start_control(max_in_flight=1, max_queued=0)
    async with await MqttDevice.provisioned(api.server, "one", answer=lambda r: None) as dev:
        assert (await api.post("/api/devices/one/tasks", LESSON))[0] == 202
        await dev.next_request()
        async with api.http.post(api.base + "/api/devices/one/tasks", json=LESSON) as r:
            assert r.status == 429 and int(r.headers["Retry-After"]) >= 1


async def test_requests_are_pruned_per_device(api, device, device_id, monkeypatch):
    monkeypatch.setattr(store, "KEEP_REQUESTS", 4)
    for _ in range(12):
        assert (await api.post("/api/devices/%s/tasks" % device_id, LESSON, wait=5))[0] == 200
        await device.next_request()
    # Pruned back to 4 each time the count passes 4 + 4 // 4.
    assert (await api.server.control.store.counts(device_id))["requests"] <= 5
