"""The board's own MQTT client (firmware/lib/mqtt.py, in a process of its
own on the MicroPython unix port and on CPython) against the server's
authenticated broker: it logs in with the device's credentials, and many
publishes at once each arrive whole and once (they share one send buffer;
on MicroPython, where every drain yields, a burst of acks overwrote each
other)."""
import asyncio
import json
import sys

import aiomqtt
import pytest

from testkit import ROOT, firmware_env, tool
from testkit.mqtt_device import credentials, server_login
from xiaozhi_server import protocol as proto

BOARD = """
import asyncio, json, sys
import mqtt
port, dev, user, password, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])

async def main():
    c = mqtt.MQTTClient("127.0.0.1", port, "board-" + dev, user=user, password=password, send_buf=2048)
    asyncio.create_task(c.run())
    while not c.connected:
        await asyncio.sleep(0.01)
    topic = "snlp/v1/%s/rpt/burst" % dev
    # Big enough that the socket's buffer fills and senders queue for the lock.
    pad = "x" * 1500
    oks = await asyncio.gather(*(c.publish(topic, json.dumps({"n": i, "pad": pad}).encode(), 1)
                                 for i in range(n)))
    print(json.dumps({"delivered": sum(1 for ok in oks if ok)}))
    await c.disconnect()

asyncio.run(main())
"""


@pytest.mark.parametrize("interp", ["micropython", "cpython"])
async def test_a_burst_of_publishes_from_the_board_arrives_whole(api, interp):
    exe = [tool("micropython"), "-X", "heapsize=16M"] if interp == "micropython" else [sys.executable]
    dev = "02:00:00:00:00:77"
    user, password = await credentials(api.server, dev)
    s_user, s_password = server_login(api.server)
    got = []
    async with aiomqtt.Client("127.0.0.1", api.server.broker.port, username=s_user, password=s_password,
                              identifier="listener") as listener:
        await listener.subscribe("snlp/v1/%s/rpt/burst" % dev, qos=1)
        proc = await asyncio.create_subprocess_exec(
            *exe, "-c", BOARD, str(api.server.broker.port), dev, user, password, "900",
            cwd=ROOT, env=firmware_env(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
        assert json.loads(out.decode().splitlines()[-1]) == {"delivered": 900}

        async def collect():
            async for m in listener.messages:
                got.append(json.loads(m.payload)["n"])
                if len(got) == 900:
                    return
        try:
            await asyncio.wait_for(collect(), 30)
        except asyncio.TimeoutError:
            pass
    assert sorted(got) == list(range(900)), (len(got), len(set(got)))


TWINS = """
import asyncio, json, sys
import mqtt
port, dev, user, password = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]

async def main():
    # Two boards with one device id (a copied state): the broker gives the
    # session to the newer CONNECT and drops the other, again and again.
    twins = [mqtt.MQTTClient("127.0.0.1", port, "xz-" + dev, user=user, password=password,
                             send_buf=512, max_packet=512, retry_ms=(50, 30000)) for _ in range(2)]
    for c in twins:
        asyncio.create_task(c.run())
    while twins[0].connects < 5:
        await asyncio.sleep(0.02)
    print(json.dumps({"connects": [c.connects for c in twins],
                      "delay_ms": [c.retry_delay_ms for c in twins]}))
    for c in twins:
        await c.disconnect()

asyncio.run(main())
"""


@pytest.mark.parametrize("interp", ["micropython", "cpython"])
async def test_two_boards_with_one_client_id_back_off_instead_of_storming(api, interp):
    # Without backoff growth both boards reconnect every 50 ms for ever; with
    # it, each link that the other board takes at once doubles the next wait.
    exe = [tool("micropython"), "-X", "heapsize=4M"] if interp == "micropython" else [sys.executable]
    dev = "02:00:00:00:00:78"
    user, password = await credentials(api.server, dev)
    proc = await asyncio.create_subprocess_exec(
        *exe, "-c", TWINS, str(api.server.broker.port), dev, user, password,
        cwd=ROOT, env=firmware_env(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode == 0, err.decode()
    got = json.loads(out.decode().splitlines()[-1])
    # Four links of A were taken from it: its wait grew 50, 100, 200, 400 ms.
    assert got["delay_ms"][0] >= 400, got
    assert b"retrying in" in out
