"""The broker the server starts binds the client id to the login (issue 26):
a device's client id was `xz-<device id>`, which anyone can compute, and a
device logged in with its own credentials but that client id threw the real
board off the broker. And the broker ends with the server, even a server
killed with SIGKILL: one left behind held the port with the old password
file, and the next server could not give it new devices."""
import asyncio
import os
import signal
import subprocess
import sys

import aiomqtt

import testkit
from testkit.child_procs import wait_gone
from testkit.mosquitto import free_port
from testkit.mqtt_device import MqttDevice, credentials
from xiaozhi_server import protocol as proto

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}


async def test_a_device_cannot_throw_another_off_the_broker_with_its_client_id(api):
    port = api.server.broker.port
    async with await MqttDevice.provisioned(api.server, "victim1", identifier="xz-victim1") as board:
        user, password = await credentials(api.server, "attacker1")
        for identifier in ("xz-victim1", "d.victim1", "dev-victim1"):
            async with aiomqtt.Client("127.0.0.1", port, username=user, password=password, identifier=identifier):
                pass
        status, body = await api.post("/api/devices/victim1/tasks", LESSON, wait=10)
        assert status == 200 and body["ack"]["code"] == proto.ACK_ACCEPTED, body
        assert not board._task.done(), "the board lost its broker session"


def test_the_broker_ends_with_a_server_killed_with_sigkill(tmp_path):
    script = (
        "import asyncio\n"
        "from xiaozhi_server.control.broker import Broker\n"
        "from xiaozhi_server.control.credentials import Credentials\n"
        "async def main():\n"
        "    b = await Broker(port=%d, credentials=Credentials(%r).load()).start()\n"
        "    print(b._proc.pid, flush=True)\n"
        "    await asyncio.sleep(120)\n"
        "asyncio.run(main())\n" % (free_port(), str(tmp_path / "mqtt")))
    env = dict(os.environ, PYTHONPATH=str(testkit.ROOT / "server"))
    server = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env)
    try:
        broker_pid = int(server.stdout.readline())
        os.kill(server.pid, signal.SIGKILL)
        server.wait(30)
        assert wait_gone(broker_pid, 30), "mosquitto outlived the server that started it"
    finally:
        server.kill()
        server.wait()
        server.stdout.close()
