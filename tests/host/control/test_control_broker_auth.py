"""The server's broker trusts no one by default: an anonymous client is
refused, and a device logged in with its own credentials can neither forge
another device's acks and reports nor read or write another device's
commands. Each forgery is followed by a genuine message from the same
publisher, so the order the broker keeps proves the forgery was dropped."""
import aiomqtt
import pytest

from testkit.control_api import eventually
from testkit.mqtt_device import MqttDevice, credentials
from xiaozhi_server import protocol as proto

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}


async def test_anonymous_and_wrong_password_clients_are_refused(api):
    port = api.server.broker.port
    with pytest.raises(aiomqtt.MqttCodeError) as e:
        async with aiomqtt.Client("127.0.0.1", port, identifier="anon"):
            pass
    assert "authori" in str(e.value).lower()
    user, _ = await credentials(api.server, "kid1")
    with pytest.raises(aiomqtt.MqttCodeError):
        async with aiomqtt.Client("127.0.0.1", port, username=user, password="guess", identifier="guess"):
            pass


async def test_a_device_cannot_forge_another_devices_ack(api, device, device_id):
    device.answer = lambda r: None
    status, s = await api.post("/api/devices/%s/schedules" % device_id, {"time": "07:00", "pending_task": LESSON})
    assert status == 201
    await device.next_request()
    forged = proto.mqtt_ack(s["last_req_id"], True, proto.ACK_ACCEPTED, "forged", device_id=device_id)
    async with await MqttDevice.provisioned(api.server, device_id, login_as="intruder") as intruder:
        await intruder.publish_ack(forged)          # on the victim's rpt/ack, with the intruder's login
    await device.publish_ack(proto.mqtt_ack(s["last_req_id"], False, proto.ACK_REFUSED, "genuine refusal",
                                            reason="test", device_id=device_id))

    async def settled():
        _, now = await api.get("/api/devices/%s/schedules/%s" % (device_id, s["alarm_id"]))
        return now if now["state"] != "pending_ack" else None
    now = await eventually(settled)
    # The server keeps the first ack of a request: the forged one never arrived.
    assert now["last_ack"]["message"] == "genuine refusal" and now["state"] == "failed"


async def test_a_device_cannot_forge_another_devices_state_report(api, device_id):
    async with await MqttDevice.provisioned(api.server, "intruder2") as intruder:
        await intruder.publish_raw(proto.topic(proto.TOPIC_RPT_STATE, device_id),
                                   proto.encode(proto.mqtt_state(device_id, proto.STATE_SPEAKING)).encode())
        await intruder.publish_state(proto.mqtt_state("intruder2", proto.STATE_IDLE))

    async def own_report_seen():
        _, d = await api.get("/api/devices/intruder2")
        return d["state"]
    await eventually(own_report_seen)
    _, victim = await api.get("/api/devices/%s" % device_id)
    assert victim["state"] is None


async def test_a_device_can_neither_read_nor_send_another_devices_commands(api, device, device_id):
    user, password = await credentials(api.server, "snoop")
    async with aiomqtt.Client("127.0.0.1", api.server.broker.port, username=user, password=password,
                              identifier="snoop") as snoop:
        await snoop.subscribe(proto.topic(proto.TOPIC_CMD_TASK, device_id), qos=1)
        await snoop.subscribe(proto.topic(proto.TOPIC_CMD_TASK, "snoop"), qos=1)
        # A command of the snoop's own making, on the victim's topic.
        fake = proto.mqtt_request({"device_id": device_id, "req_id": "fake-1"}, proto.ACTION_START_APP_TASK,
                                  dict(LESSON, source=proto.SOURCE_MQTT_IMMEDIATE))
        await snoop.publish(proto.topic(proto.TOPIC_CMD_TASK, device_id), proto.encode(fake).encode(), qos=1)

        status, sent = await api.post("/api/devices/%s/tasks" % device_id, LESSON)
        assert status == 202
        _, first = await device.next_request()
        assert first["header"]["req_id"] == sent["req_id"]   # the fake never reached the device
        status, mine = await api.post("/api/devices/snoop/tasks", LESSON)
        async for m in snoop.messages:
            # The broker delivers in order: the victim's command would have come first.
            assert m.topic.value == proto.topic(proto.TOPIC_CMD_TASK, "snoop")
            assert proto.decode_mqtt_request(m.payload)["header"]["req_id"] == mine["req_id"]
            break


async def test_the_link_port_is_the_configured_one(tmp_path):
    """mqtt.link_port (XIAOZHI_MQTT_LINK_PORT): a firewall or a second server on this host knows it."""
    from testkit.mosquitto import free_port
    from testkit.control_api import control_config
    from xiaozhi_server import config as configmod
    from xiaozhi_server.server import XiaozhiServer
    port = free_port()
    cfg = control_config(tmp_path / "control.db")
    cfg["mqtt"]["link_port"] = int(configmod.load(str(tmp_path / "none.yaml"), env={"XIAOZHI_MQTT_LINK_PORT": str(port)},
                                                  write_default=False)["mqtt"]["link_port"])
    server = await XiaozhiServer(cfg, with_broker=True, with_mcp=False).start()
    try:
        assert server.broker.link_port == port
        assert server.broker.server_address() == ("127.0.0.1", port, "tcp")
    finally:
        await server.stop()
