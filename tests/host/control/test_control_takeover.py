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
        "from xiaozhi_server.broker.broker import Broker\n"
        "from xiaozhi_server.broker.credentials import Credentials\n"
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


async def test_a_node_whose_link_session_is_taken_over_says_so_and_stops(caplog):
    # Two nodes given one broker login and client id kicked each other off
    # in a loop, silently, each missing the reports sent meanwhile.
    from testkit.control_api import eventually
    from testkit.mosquitto import Mosquitto
    from xiaozhi_server.errors import BrokerUnavailable
    from xiaozhi_server.broker.mqtt import MqttLink
    broker = Mosquitto().start()
    first = MqttLink("127.0.0.1", broker.port, identifier="xiaozhi-server-node-a")
    second = MqttLink("127.0.0.1", broker.port, identifier="xiaozhi-server-node-a")
    try:
        await first.start()
        assert first.connected.is_set()
        await second.start()
        await eventually(lambda: first.taken_over, timeout=30)
        lines = [r.getMessage() for r in caplog.records if "took over this node's session" in r.getMessage()]
        assert len(lines) == 1 and "same broker login" in lines[0], lines
        assert first._task.done() and not first.connected.is_set()      # it stopped, not a loop
        try:
            await first.publish("dev/x/cmd", {"type": "x"})
            raise AssertionError("a link that lost its session published")
        except BrokerUnavailable as e:
            assert "took over" in str(e)
        # The other node keeps the session (it was kicked only while the loop lasted).
        await eventually(lambda: second.connected.is_set(), timeout=30)
        assert second.taken_over is None and not second._task.done()
    finally:
        await first.stop()
        await second.stop()
        broker.close()


async def test_a_device_login_cannot_knock_the_link_off_its_own_port(api):
    # The server's link comes in on a loopback port of its own with the
    # node's client id, which /health shows. A device's login there, with
    # that client id, took the link's session in a loop.
    server = api.server
    link = server.control.link
    await link.connected.wait()
    connects = link.connects
    user, password = await credentials(server, "attacker2")
    for identifier in (link.identifier, "anything-else"):
        try:
            async with aiomqtt.Client("127.0.0.1", server.broker.link_port, username=user, password=password,
                                      identifier=identifier, timeout=5):
                raise AssertionError("a device login was taken on the link port as %s" % identifier)
        except aiomqtt.MqttError as e:
            assert "authori" in str(e).lower() or "not authorised" in str(e).lower() or "refused" in str(e).lower(), e
    assert link.connected.is_set() and link.connects == connects and link.taken_over is None
