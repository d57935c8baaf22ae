"""POST /api/devices/{id}/tasks: checked against the registry, published as
START_APP_TASK on cmd/task, acked by the device."""
from testkit.control_api import eventually
from xiaozhi_server import protocol as proto

REPEATER = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3", "repeat": 2}}


async def test_task_start_reaches_the_device_and_wait_returns_its_ack(api, device, device_id):
    status, body = await api.post("/api/devices/%s/tasks" % device_id, REPEATER, wait=5)
    topic, request = await device.next_request()
    assert topic == proto.topic(proto.TOPIC_CMD_TASK, device_id)
    assert request["action"] == proto.ACTION_START_APP_TASK
    assert request["header"]["device_id"] == device_id
    assert request["payload"] == dict(REPEATER, source=proto.SOURCE_MQTT_IMMEDIATE)
    assert status == 200
    assert body["req_id"] == request["header"]["req_id"]
    assert body["ack"]["ok"] is True and body["ack"]["code"] == proto.ACK_ACCEPTED
    assert device.invalid == []


async def test_without_wait_the_answer_is_202_and_the_ack_is_recorded_later(api, device, device_id):
    status, body = await api.post("/api/devices/%s/tasks" % device_id, {"app_id": "english_translation"})
    assert status == 202 and body["ack"] is None
    _, request = await device.next_request()
    assert request["payload"]["task_id"] == "live_translate"   # the app's default task

    async def acked():
        _, d = await api.get("/api/devices/%s" % device_id)
        return [r for r in d["recent_requests"] if r["req_id"] == body["req_id"] and r["ack"]]
    [req] = await eventually(acked)
    assert req["ack"]["code"] == proto.ACK_ACCEPTED


async def test_a_refusal_from_the_device_is_returned_as_it_is(api, device, device_id):
    device.answer = lambda r: proto.mqtt_ack(r["header"]["req_id"], False, proto.ACK_REFUSED,
                                             "an immediate task is running", reason="lower_priority")
    status, body = await api.post("/api/devices/%s/tasks" % device_id, REPEATER, wait=5)
    assert status == 200
    assert body["ack"]["ok"] is False and body["ack"]["reason"] == "lower_priority"


async def test_no_ack_within_wait_gives_202_with_no_ack(api, device, device_id):
    device.answer = lambda r: None
    status, body = await api.post("/api/devices/%s/tasks" % device_id, REPEATER, wait=0.3)
    assert status == 202 and body["ack"] is None and body["req_id"]


async def _refused(api, device, device_id, body, field, **q):
    status, answer = await api.post("/api/devices/%s/tasks" % device_id, body, **q)
    assert status == 400, answer
    assert answer["error"]["code"] == "invalid_request"
    assert field in answer["error"]["message"], answer
    assert await device.no_request(0.3), "nothing may be published for a refused request"
    return answer["error"]["message"]


async def test_unknown_app_is_refused_naming_the_field(api, device, device_id):
    msg = await _refused(api, device, device_id, {"app_id": "karaoke"}, "app_id")
    assert "karaoke" in msg


async def test_unknown_task_is_refused(api, device, device_id):
    await _refused(api, device, device_id, {"app_id": "chat", "task_id": "singing"}, "task_id")


async def test_reserved_task_is_refused_as_not_available(api, device, device_id):
    msg = await _refused(api, device, device_id, {"app_id": "english_learning", "task_id": "idiom_chain"}, "task_id")
    assert "not available" in msg


async def test_params_failing_the_task_schema_are_refused(api, device, device_id):
    await _refused(api, device, device_id, {"app_id": "english_learning", "params": {}}, "name")
    await _refused(api, device, device_id, {"app_id": "english_learning", "params": {"name": "a.mp3", "repeat": 0}},
                   "params.repeat")
    await _refused(api, device, device_id, {"app_id": "english_learning", "params": {"name": "../etc/x"}},
                   "params.name")


async def test_bad_bodies_and_arguments_are_refused(api, device, device_id):
    await _refused(api, device, device_id, dict(REPEATER, priority=9), "priority")
    await _refused(api, device, device_id, REPEATER, "wait", wait="soon")
    async with api.http.post(api.base + "/api/devices/%s/tasks" % device_id, data=b"{not json") as r:
        assert r.status == 400 and "JSON" in (await r.json())["error"]["message"]


async def test_a_wildcard_device_id_is_refused(api, device):
    status, answer = await api.post("/api/devices/dev%2B/tasks", REPEATER)
    assert status == 400 and "device_id" in answer["error"]["message"]
