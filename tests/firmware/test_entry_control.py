# MQTT control: a request too big to read is refused by the req_id found in
# its first bytes, once; without one it is only reported.
import json

import t
import hal.host  # noqa: F401
import proto
from app import control


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
