"""Writes that race are decided once: of concurrent creates of one alarm id
exactly one gets 201; PUT and DELETE with If-Match name the revision they
read (412 when it moved on); text that is not Unicode is refused at the edge
and what is stored always reads back."""
import asyncio
import json

from testkit.postgres import BOTH_STORES
from xiaozhi_server import protocol as proto

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}


def path(device_id, alarm_id=None):
    return "/api/devices/%s/schedules%s" % (device_id, "/" + alarm_id if alarm_id else "")


@BOTH_STORES
async def test_twenty_concurrent_creates_of_one_id_give_one_201(api, device, device_id):
    bodies = [{"alarm_id": "same", "time": "07:%02d" % i, "pending_task": LESSON} for i in range(20)]
    answers = await asyncio.gather(*(api.post(path(device_id), b) for b in bodies))
    statuses = sorted(s for s, _ in answers)
    assert statuses == [201] + [409] * 19
    [won] = [b for s, b in answers if s == 201]
    assert all("already exists" in b["error"]["message"] for s, b in answers if s == 409)
    _, req = await device.next_request()
    assert req["payload"]["time"] == won["time"]
    assert await device.no_request(0.3), "the refused creates sent nothing"
    _, listed = await api.get(path(device_id))
    assert [(s["alarm_id"], s["time"]) for s in listed["schedules"]] == [("same", won["time"])]


@BOTH_STORES
async def test_put_and_delete_with_a_stale_etag_get_412(api, device, device_id):
    async with api.http.post(api.base + path(device_id), params={"wait": "5"},
                             json={"alarm_id": "bed", "time": "20:00", "pending_task": LESSON}) as r:
        assert r.status == 201
        etag = r.headers["ETag"]
    await device.next_request()
    changed = {"time": "20:30", "pending_task": LESSON}
    async with api.http.put(api.base + path(device_id, "bed"), params={"wait": "5"}, json=changed,
                            headers={"If-Match": etag}) as r:
        assert r.status == 200
        body = await r.json()
        new_etag = r.headers["ETag"]
    assert body["time"] == "20:30" and body["state"] == "active" and new_etag != etag
    _, req = await device.next_request()
    assert req["action"] == proto.ACTION_SET_ALARM and req["payload"]["time"] == "20:30"

    # A second parent still holding the first ETag loses, and nothing is sent.
    async with api.http.put(api.base + path(device_id, "bed"), json={"time": "06:00", "pending_task": LESSON},
                            headers={"If-Match": etag}) as r:
        assert r.status == 412
        err = await r.json()
    assert err["error"]["code"] == "precondition_failed" and err["schedule"]["time"] == "20:30"
    async with api.http.delete(api.base + path(device_id, "bed"), headers={"If-Match": etag}) as r:
        assert r.status == 412
    assert await device.no_request(0.3)

    async with api.http.delete(api.base + path(device_id, "bed"), headers={"If-Match": new_etag}) as r:
        assert r.status == 200 and (await r.json())["state"] == "deleted"
    _, req = await device.next_request()
    assert req["action"] == proto.ACTION_UNSET_ALARM


@BOTH_STORES
async def test_concurrent_deletes_send_one_unset(api, device, device_id):
    assert (await api.post(path(device_id), {"alarm_id": "nap", "time": "13:00", "pending_task": LESSON},
                           wait=5))[0] == 201
    await device.next_request()
    answers = await asyncio.gather(*(api.delete(path(device_id, "nap")) for _ in range(5)))
    assert sorted(s for s, _ in answers) == [200] + [404] * 4
    _, req = await device.next_request()
    assert req["action"] == proto.ACTION_UNSET_ALARM
    assert await device.no_request(0.3)


async def test_put_of_a_missing_schedule_is_404_and_a_body_id_must_match(api, device, device_id):
    status, err = await api.call("PUT", path(device_id, "ghost"), {"time": "07:00", "pending_task": LESSON})
    assert status == 404
    assert (await api.post(path(device_id), {"alarm_id": "real", "time": "07:00", "pending_task": LESSON}))[0] == 201
    status, err = await api.call("PUT", path(device_id, "real"),
                                 {"alarm_id": "other", "time": "07:00", "pending_task": LESSON})
    assert status == 400 and "alarm_id" in err["error"]["message"]


@BOTH_STORES
async def test_a_lone_surrogate_is_refused_and_the_device_still_reads(api, device, device_id):
    raw = '{"app_id": "english_learning", "params": {"name": "\\ud800.mp3"}}'
    async with api.http.post(api.base + "/api/devices/%s/tasks" % device_id, data=raw,
                             headers={"Content-Type": "application/json"}) as r:
        assert r.status == 400
        err = await r.json()
    assert err["error"]["code"] == "invalid_request"
    assert "body.params.name" in err["error"]["message"] and "surrogate" in err["error"]["message"]
    raw = '{"time": "07:00", "pending_task": {"app_id": "english_learning", "task_id": "repeater", ' \
          '"params": {"name": "a\\udfff.mp3"}}}'
    async with api.http.post(api.base + path(device_id), data=raw) as r:
        assert r.status == 400
    assert await device.no_request(0.3)

    # A row stored with one (by a server from before this check) still reads
    # back as valid JSON, the surrogate escaped.
    await api.server.control.store.save_state(device_id, proto.mqtt_state(device_id, "idle", message="bad \ud800"))
    async with api.http.get(api.base + "/api/devices/%s" % device_id) as r:
        assert r.status == 200
        d = json.loads(await r.read())
    assert d["state"]["report"]["message"] == "bad \ud800"
    status, listed = await api.get(path(device_id))
    assert status == 200 and listed["schedules"] == []


async def test_a_body_nested_past_the_limit_is_a_400(api, device, device_id):
    deep = '{"app_id": "chat", "params": ' + "[" * 5000 + "]" * 5000 + "}"
    async with api.http.post(api.base + "/api/devices/%s/tasks" % device_id, data=deep,
                             headers={"Content-Type": "application/json"}) as r:
        assert r.status == 400
        assert "nested deeper" in (await r.json())["error"]["message"]
    async with api.http.post(api.base + "/api/devices/%s/tasks" % device_id, data=b'{"app_id": "\xff"}',
                             headers={"Content-Type": "application/json"}) as r:
        assert r.status == 400 and "UTF-8" in (await r.json())["error"]["message"]
