# MQTT control: a request too big to read is refused by the req_id found in
# its first bytes, once; without one it is only reported.
import json

import t
import hal.host  # noqa: F401
import proto
from app.control import control


def _ctl():
    sent = []

    async def publish(topic, data, qos=1):
        sent.append((topic, json.loads(data)))
        return True
    return control.Control("02:00:00:00:00:01", publish, {}), sent


async def test_oversize_refused_by_the_req_id_in_its_head():
    c, sent = _ctl()
    head = b'{"header": {"req_id": "big-1", "device_id": "02:00:00:00:00:01"}, "payload": {"x": "xxxx'
    await c.on_oversize(c.topics[1], 70000, head, 2048)
    t.eq(len(sent), 1)
    topic, ack = sent[0]
    t.eq(topic, c.ack_topic)
    t.eq((ack["req_id"], ack["code"], ack["reason"]), ("big-1", proto.ACK_REFUSED, "too_large"))
    t.true("70000" in ack["message"] and "2048" in ack["message"], ack["message"])
    await c.on_oversize(c.topics[1], 70000, head, 2048)   # re-delivered: acked once
    t.eq(len(sent), 1)


async def test_oversize_without_req_id_is_reported():
    c, sent = _ctl()
    await c.on_oversize(c.topics[0], 70000, b'{"payload": "xxxxxxxx', 2048)
    await c.on_oversize(c.topics[0], 70000, b'{"header": {"req_id": "a\\"b"}}', 2048)
    t.eq([s[0] for s in sent], [c.state_topic, c.state_topic])
    t.eq(sent[0][1]["event"], "request_dropped")
    await c.on_oversize("other/topic", 70000, b'{"header": {"req_id": "z"}}', 2048)
    t.eq(len(sent), 2)


class _Clock:
    def __init__(self, now):
        self.now = now

    def time(self):
        return self.now


NOW = 1767225600  # 2026-01-01


def _board_store(path):
    from hal.host.nvs import NVSFlash
    import nvs_store
    return nvs_store.RecordStore(NVSFlash(path).open("xiaozhi"))


def _request(rid, ts=None, dev="02:00:00:00:00:01"):
    header = {"device_id": dev, "req_id": rid}
    if ts is not None:
        header["timestamp"] = ts
    return json.dumps(proto.mqtt_request(header, proto.ACTION_UNSET_ALARM, {"alarm_id": "a1"})).encode()


def _counting(store, clock):
    ran = []

    async def unset(req):
        ran.append(req["header"]["req_id"])
        return proto.ACK_ACCEPTED, "removed", "ok"
    sent = []

    async def publish(topic, data, qos=1):
        sent.append(json.loads(data))
        return True
    c = control.Control("02:00:00:00:00:01", publish, {proto.ACTION_UNSET_ALARM: unset}, clock, store)
    return c, ran, sent


async def test_a_request_handled_before_a_reboot_is_not_run_again():
    path = t.tmpdir("ring") + "/nvs.json"
    c, ran, sent = _counting(_board_store(path), _Clock(NOW))
    await c.on_message(c.topics[0], _request("r-1", NOW * 1000))
    t.eq((ran, [a["req_id"] for a in sent]), (["r-1"], ["r-1"]))
    # Power cycle: a new Control on the same NVS gets the retained request again.
    c, ran, sent = _counting(_board_store(path), _Clock(NOW + 60))
    await c.on_message(c.topics[0], _request("r-1", NOW * 1000))
    t.eq((ran, sent), ([], []))
    await c.on_message(c.topics[0], _request("r-2", (NOW + 60) * 1000))
    t.eq(ran, ["r-2"])


async def test_the_same_request_again_gets_its_ack_again_not_a_second_run():
    # A server whose node died before it stored the ack sends the same req_id again.
    c, ran, sent = _counting(None, _Clock(NOW))
    await c.on_message(c.topics[0], _request("r-1", NOW * 1000))
    await c.on_message(c.topics[0], _request("r-1", NOW * 1000))
    t.eq(ran, ["r-1"])
    t.eq([(a["req_id"], a["code"], a["reason"], a["message"]) for a in sent],
         [("r-1", proto.ACK_ACCEPTED, "removed", "ok")] * 2)
    for i in range(2, 20):      # a request that left the ring is run again (the limit of 16)
        await c.on_message(c.topics[0], _request("r-%d" % i, NOW * 1000 + i))
    t.true(len(c._acked) <= 16, len(c._acked))


async def test_the_ring_keeps_the_last_sixteen_across_reboots():
    path = t.tmpdir("ring16") + "/nvs.json"
    c, ran, _ = _counting(_board_store(path), _Clock(NOW))
    for i in range(20):
        await c.on_message(c.topics[0], _request("r-%d" % i, NOW))
    c, ran, _ = _counting(_board_store(path), _Clock(NOW))
    for i in range(4, 20):
        await c.on_message(c.topics[0], _request("r-%d" % i, NOW))
    t.eq(ran, [])
    await c.on_message(c.topics[0], _request("r-3", NOW))
    t.eq(ran, ["r-3"])   # it fell out of the ring: the limit of 16


async def test_a_stale_request_is_refused_not_run():
    c, ran, sent = _counting(None, _Clock(NOW))
    await c.on_message(c.topics[1], _request("old-ms", (NOW - 3600) * 1000))
    await c.on_message(c.topics[1], _request("old-s", NOW - control.STALE_S - 5))
    t.eq(ran, [])
    t.eq([(a["req_id"], a["code"], a["reason"]) for a in sent],
         [("old-ms", proto.ACK_REFUSED, "stale"), ("old-s", proto.ACK_REFUSED, "stale")])
    t.true("3600 s ago" in sent[0]["message"], sent[0]["message"])
    await c.on_message(c.topics[1], _request("fresh", (NOW - 30) * 1000))
    await c.on_message(c.topics[1], _request("no-timestamp"))
    t.eq(ran, ["fresh", "no-timestamp"])


async def test_an_unset_clock_judges_no_age():
    c, ran, sent = _counting(None, _Clock(946684800))   # the DS3231 after a battery change: 2000-01-01
    await c.on_message(c.topics[0], _request("r-old", (NOW - 86400) * 1000))
    t.eq(ran, ["r-old"])


def _from(sender, rid, ts):
    req = json.loads(_request(rid, ts))
    if sender is not None:
        req["header"]["sender"] = sender
    return json.dumps(req).encode()


async def test_a_request_older_than_the_newest_handled_never_runs_again():
    # Issue 27: the ring forgets after 16, the newest timestamp per sender does not.
    path = t.tmpdir("newest") + "/nvs.json"
    c, ran, sent = _counting(_board_store(path), _Clock(NOW))
    await c.on_message(c.topics[0], _from("node-a", "kept", NOW * 1000))
    for i in range(20):
        await c.on_message(c.topics[0], _from("node-a", "r-%d" % i, NOW * 1000 + 1 + i))
    t.eq(len(ran), 21)
    c, ran, sent = _counting(_board_store(path), _Clock(NOW + 60))   # a reboot
    await c.on_message(c.topics[0], _from("node-a", "kept", NOW * 1000))   # retained: back at connect
    await c.on_message(c.topics[0], _from("node-a", "r-0", NOW * 1000 + 1))
    t.eq(ran, [])
    t.eq([(a["req_id"], a["code"], a["reason"]) for a in sent],
         [("kept", proto.ACK_REFUSED, "replayed"), ("r-0", proto.ACK_REFUSED, "replayed")])
    await c.on_message(c.topics[0], _from("node-a", "kept", NOW * 1000))   # re-delivered: the same answer
    t.eq((ran, sent[2]), ([], sent[0]))
    # Another sender's clock is its own; one in seconds compares as ms; the same ms runs.
    await c.on_message(c.topics[0], _from("node-b", "b-1", NOW * 1000 - 5000))
    await c.on_message(c.topics[0], _from(None, "anon-1", NOW))
    await c.on_message(c.topics[0], _from(None, "anon-0", NOW - 1))
    await c.on_message(c.topics[0], _from("node-a", "same-ms", NOW * 1000 + 20))
    t.eq(ran, ["b-1", "anon-1", "same-ms"])


async def test_the_newest_per_sender_is_kept_for_eight_senders():
    path = t.tmpdir("senders") + "/nvs.json"
    c, ran, _ = _counting(_board_store(path), _Clock(NOW))
    for i in range(control.SENDERS + 1):       # node-0 is the one heard from longest ago
        await c.on_message(c.topics[0], _from("node-%d" % i, "n-%d" % i, NOW * 1000 + i))
    c, ran, sent = _counting(_board_store(path), _Clock(NOW))
    for i in range(control.SENDERS, -1, -1):   # node-0 last: it is no longer known
        await c.on_message(c.topics[0], _from("node-%d" % i, "old-%d" % i, NOW * 1000 - 1))
    t.eq(ran, ["old-0"])
    t.eq(len(sent), control.SENDERS + 1)
