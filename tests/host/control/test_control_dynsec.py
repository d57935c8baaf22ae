"""Device logins live in the broker (mosquitto's dynamic security plugin),
so every node manages them (issue 27): revoking one device of three closes
that one's connection and refuses its login while the other two stay
connected and served; a second server process, sharing only the broker,
provisions and revokes through it; a server does not start on a broker
that takes anonymous clients or wrong passwords."""
import contextlib
import json
import os
import subprocess
import sys

import aiohttp
import aiomqtt
import pytest

from testkit import ROOT
from testkit.control_api import eventually
from testkit.mosquitto import Mosquitto, free_port
from testkit.mqtt_device import MqttDevice
from testkit.server import server_config
from xiaozhi_server.broker.broker import BrokerError
from xiaozhi_server.server import XiaozhiServer

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}


async def _refused(port, user, password):
    with pytest.raises(aiomqtt.MqttCodeError) as e:
        async with aiomqtt.Client("127.0.0.1", port, username=user, password=password, identifier="probe"):
            pass
    return "authori" in str(e.value).lower()


async def test_revoking_one_of_three_devices_leaves_the_other_two_connected(api):
    devices = {}
    async with contextlib.AsyncExitStack() as stack:
        for name in ("kid-a", "kid-b", "kid-c"):
            devices[name] = await stack.enter_async_context(await MqttDevice.provisioned(api.server, name))
        b = devices["kid-b"]
        async with api.http.delete(api.base + "/api/devices/kid-b/credentials") as r:
            assert r.status == 204
        await eventually(lambda: b._task.done() or None)        # the broker closed its connection
        assert await _refused(api.server.broker.port, b.username, b.password)
        for name in ("kid-a", "kid-c"):
            status, sent = await api.post("/api/devices/%s/tasks" % name, LESSON)
            assert status == 202
            _, req = await devices[name].next_request()
            assert req["header"]["req_id"] == sent["req_id"]
            assert not devices[name]._task.done()
        async with api.http.delete(api.base + "/api/devices/kid-b/credentials") as r:
            assert r.status == 404


async def test_a_second_server_process_provisions_and_revokes_through_the_same_broker(api, tmp_path):
    broker = api.server.broker
    here = await MqttDevice.provisioned(api.server, "kid-here")
    async with here:
        port = free_port()
        cfg = {"server": {"host": "127.0.0.1", "ws_port": free_port(), "http_port": port, "workers": 1},
               "llm": {"type": "none"}, "tts": {"type": "espeak"},
               "mqtt": {"url": "mqtt://%s:%s@127.0.0.1:%d" % (broker.username, broker.password, broker.port),
                        "admin_user": broker.admin_user, "admin_password": broker.admin_password},
               "control": {"db_path": str(tmp_path / "node2" / "control.db")}}
        (tmp_path / "node2").mkdir()
        (tmp_path / "node2.json").write_text(json.dumps(cfg))
        log = open(tmp_path / "node2.log", "wb")
        node2 = subprocess.Popen([sys.executable, "-m", "xiaozhi_server", "run", "--config",
                                  str(tmp_path / "node2.json")], cwd=str(tmp_path / "node2"), stdout=log,
                                 stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONPATH=str(ROOT / "server")))
        try:
            base = "http://127.0.0.1:%d" % port
            async with aiohttp.ClientSession() as http:
                async def up():
                    if node2.poll() is not None:
                        raise AssertionError((tmp_path / "node2.log").read_text()[-2000:])
                    try:
                        async with http.get(base + "/health") as r:
                            return r.status == 200 or None
                    except aiohttp.ClientError:
                        return None
                await eventually(up, timeout=60)
                async with http.post(base + "/api/devices/kid-there/credentials") as r:
                    assert r.status == 200
                    creds = (await r.json())["mqtt"]
                async with MqttDevice(broker.port, "kid-there", username=creds["username"],
                                      password=creds["password"]) as there:
                    # The first node's plane sends to a device the second node provisioned.
                    status, sent = await api.post("/api/devices/kid-there/tasks", LESSON, wait=5)
                    assert status == 200 and sent["ack"]["ok"]      # its ack went out before the revoke
                    async with http.delete(base + "/api/devices/kid-there/credentials") as r:
                        assert r.status == 204
                    await eventually(lambda: there._task.done() or None)
                assert await _refused(broker.port, creds["username"], creds["password"])
                assert not here._task.done()                    # the first node's device stays
        finally:
            node2.terminate()
            node2.wait(10)
            log.close()


async def test_a_broker_that_takes_anonymous_clients_or_wrong_passwords_is_refused(tmp_path):
    open_broker = Mosquitto().start()
    try:
        cfg = server_config(mqtt={"url": open_broker.url}, control={"db_path": str(tmp_path / "c.db")})
        server = XiaozhiServer(cfg, with_broker=True, with_mcp=False)
        with pytest.raises(BrokerError) as e:
            try:
                await server.start()
            finally:
                await server.stop()
        assert "accepts an anonymous client" in str(e.value) and "allow_open_broker" in str(e.value)
    finally:
        open_broker.stop()


async def test_a_device_of_the_file_based_era_keeps_the_login_its_board_holds(api):
    server = api.server
    devices = server.control.devices
    await server.control.store.devices.add_device("old-kid", None, "provisioned")     # recorded, never in the broker
    user, password = devices.creds.mqtt_user("old-kid"), devices.creds.mqtt_password("old-kid")
    assert await _refused(server.broker.port, user, password)
    await devices.start()                       # what the next start does
    async with MqttDevice(server.broker.port, "old-kid", username=user, password=password) as dev:
        status, sent = await api.post("/api/devices/old-kid/tasks", LESSON)
        assert status == 202 and (await dev.next_request())[1]["header"]["req_id"] == sent["req_id"]
