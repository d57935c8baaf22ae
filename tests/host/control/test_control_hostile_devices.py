"""What one device's login can do to the control plane (issue 26): junk and
floods on its own report topics (2 000 malformed reports in a second wrote
2 010 warning lines), a look at everything else the broker holds, and two
boards sharing one device id. The control plane keeps serving, writes a
line per kind of junk, and says what it saw in the device's record."""
import asyncio
import logging

import aiomqtt
import pytest

from testkit.control_api import eventually
from testkit.mqtt_device import MqttDevice, credentials
from xiaozhi_server import protocol as proto
from xiaozhi_server.broker import mqtt as control_mqtt

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}
JUNK = [b"", b"\xff\xfe not utf-8", b"{not json", b"[1, 2, 3]", b'{"device_id": 7, "state": []}',
        b'{"req_id": "r1"}', b'{"a":' * 40 + b"1" + b"}" * 40, b'{"state": "idle", "message": "\\ud800"}',
        b'{"device_id": "x", "state": "idle", "message": "' + b"x" * 15000 + b'"}']


def control_lines(caplog):
    # The request plane's lines and its MQTT link's (broker/mqtt.py: reports dropped over the rate).
    return [r for r in caplog.records if r.name.startswith(("xiaozhi_server.control", "xiaozhi_server.broker"))
            and r.levelno >= logging.WARNING]


async def report_seen(api, device, marker):
    """Publish `marker` as the device's state until the API shows it (a
    flood may have filled the broker's queue to the server meanwhile)."""
    async def seen():
        await device.publish_state(proto.mqtt_state(device.device_id, proto.STATE_IDLE, message=marker))
        _, d = await api.get("/api/devices/%s" % device.device_id)
        return d["state"] and d["state"]["report"].get("message") == marker
    await eventually(seen, timeout=30, step=0.2)


async def test_junk_and_a_flood_on_a_devices_own_topics_write_a_few_lines(api, caplog):
    caplog.set_level(logging.INFO)
    async with await MqttDevice.provisioned(api.server, "flooder") as bad, \
            await MqttDevice.provisioned(api.server, "bystander") as good:
        for topic in (proto.TOPIC_RPT_ACK, proto.TOPIC_RPT_STATE, "snlp/v1/{device_id}/rpt/other",
                      "snlp/v1/{device_id}/rpt/state/deeper"):
            for payload in JUNK:
                await bad.publish_raw(proto.topic(topic, "flooder"), payload)
        await report_seen(api, good, "after the junk")
        junk_lines = len(control_lines(caplog))
        assert junk_lines <= 6, [r.getMessage()[:100] for r in control_lines(caplog)]

        for i in range(2000):
            await bad.publish_raw(proto.topic(proto.TOPIC_RPT_STATE, "flooder"), b'{"state": %d}' % i)
        await report_seen(api, good, "after the flood")
        status, d = await api.get("/api/devices/flooder")
        assert status == 200 and d["reports_dropped"] > 0
        # The flood sends more than the burst: the rest is dropped and counted.
        # At least one burst gets through; the junk sent on the state topic
        # drew from the same bucket before the flood began.
        assert d["reports_dropped"] <= 2000 + len(JUNK) - control_mqtt.REPORTS_BURST
        lines = control_lines(caplog)
        assert len(lines) <= junk_lines + 2, [r.getMessage()[:100] for r in lines]
        # The control plane still serves the flooder too, once it is within its rate.
        status, sent = await api.post("/api/devices/flooder/tasks", LESSON, wait=10)
        assert status == 200 and sent["ack"]["code"] == proto.ACK_ACCEPTED


async def test_oversized_reports_cost_the_sender_its_connection_only(api):
    async with await MqttDevice.provisioned(api.server, "bystander2") as good:
        user, password = await credentials(api.server, "big")

        async def send_big():
            async with aiomqtt.Client("127.0.0.1", api.server.broker.port, username=user, password=password) as big:
                await big.publish(proto.topic(proto.TOPIC_RPT_ACK, "big"), b"x" * (proto.MQTT_MAX_PAYLOAD * 2))
                async for _m in big.messages:       # until the broker closes it
                    pass
        # The broker closes the sender before the server reads a byte of it.
        with pytest.raises(aiomqtt.MqttError):
            await asyncio.wait_for(send_big(), 30)
        await report_seen(api, good, "still here")


async def test_one_devices_login_reaches_nothing_of_the_others_nor_the_broker(api, device, device_id):
    user, password = await credentials(api.server, "snoop2")
    async with aiomqtt.Client("127.0.0.1", api.server.broker.port, username=user, password=password) as snoop:
        for pattern in ("#", "$SYS/#", "snlp/#", "snlp/v1/+/cmd/#", "+/+/+/rpt/#", "snlp/v1/%s/#" % device_id):
            granted = await snoop.subscribe(pattern, qos=1)
            assert [int(getattr(g, "value", g)) for g in granted] == [0x80], (pattern, granted)   # refused
        await snoop.subscribe(proto.topic(proto.TOPIC_CMD_TASK, "snoop2"), qos=1)
        # A retained command on the victim's topic: refused by the ACL, so never replayed either.
        await snoop.publish(proto.topic(proto.TOPIC_CMD_TASK, device_id), b'{"forged": 1}', qos=1, retain=True)
        status, sent = await api.post("/api/devices/%s/tasks" % device_id, LESSON, wait=10)
        assert status == 200
        _, first = await device.next_request()
        assert first["header"]["req_id"] == sent["req_id"]      # nothing forged reached the victim first
        await device.publish_state(proto.mqtt_state(device_id, proto.STATE_IDLE))
        # A command to the snoop itself comes through: everything before it would have too.
        await api.post("/api/devices/snoop2/tasks", LESSON)
        async for m in snoop.messages:
            assert m.topic.value == proto.topic(proto.TOPIC_CMD_TASK, "snoop2"), m.topic.value
            break


async def test_two_boards_with_one_device_id_are_shown_in_its_record(api):
    user, password = await credentials(api.server, "twin")
    stop = asyncio.Event()
    connects = []

    async def board(name):
        while not stop.is_set():
            try:
                async with aiomqtt.Client("127.0.0.1", api.server.broker.port, username=user, password=password,
                                          identifier="xz-twin") as c:
                    connects.append(name)
                    await c.publish(proto.topic(proto.TOPIC_RPT_STATE, "twin"),
                                    proto.encode(proto.mqtt_state("twin", proto.STATE_IDLE, event="online")).encode(),
                                    qos=1)
                    async for _m in c.messages:     # until the other board throws this one off
                        pass
            except aiomqtt.MqttError:
                pass
            await asyncio.sleep(0.05)

    one = asyncio.create_task(board("one"))
    await eventually(lambda: connects, timeout=10)
    _, d = await api.get("/api/devices/twin")
    assert d["duplicate"] is None       # one board, connected once
    two = asyncio.create_task(board("two"))

    async def flagged():
        _, d = await api.get("/api/devices/twin")
        return d["duplicate"]
    try:
        record = await eventually(flagged, timeout=60, step=0.2)
    finally:
        stop.set()
        for t in (one, two):
            t.cancel()
        await asyncio.gather(one, two, return_exceptions=True)
    assert record["suspected"] and record["takeovers"] >= 3, record
    assert "two boards" in record["message"]
