"""Three nodes share one store and one broker: OTA sends each device to the
least loaded live node and keeps it there while that node lives; a node
that stops (or is asked to drain) gets no device any more; commands go
out once and any node matches their acks; the server secret is shared, so
a device's token works on every node."""
import asyncio
import collections

from testkit.control_api import eventually
from testkit.control_board import ControlBoard
from xiaozhi_server import protocol as proto

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}


async def ota(api, device_id, token=None):
    headers = {"Device-Id": device_id, "Client-Id": "c-" + device_id}
    if token:
        headers["Authorization"] = "Bearer " + token
    async with api.http.post(api.base + "/xiaozhi/ota/", json={}, headers=headers) as r:
        assert r.status == 200
        return (await r.json())["websocket"]


def port_of(url):
    return int(url.split(":")[2].split("/")[0])


async def test_ota_spreads_devices_sticks_to_a_live_node_and_drops_a_dead_one(fleet):
    nodes = await fleet(3)
    ws_ports = {n.server.ws.port: n for n in nodes}
    first = {}
    for i in range(30):
        dev = "kid%02d" % i
        first[dev] = port_of((await ota(nodes[i % 3], dev))["url"])
    spread = collections.Counter(first.values())
    assert set(spread) == set(ws_ports) and max(spread.values()) - min(spread.values()) <= 2, spread
    # Sticky: asking any node again gives the same node.
    for dev, port in list(first.items())[:9]:
        assert port_of((await ota(nodes[2], dev))["url"]) == port

    # A node that goes (its store connection closes, as a killed one's does) gets no device.
    gone = nodes[0]
    gone_port = gone.server.ws.port
    gone.server.node._task.cancel()
    await gone.server.control.stop()

    async def dropped():
        return gone.server.node.id not in {n["node_id"] for n in await nodes[1].server.control.nodes() if n["live"]}
    await eventually(dropped)
    for dev, port in first.items():
        url = (await ota(nodes[1], dev))["url"]
        assert port_of(url) != gone_port
        if port != gone_port:
            assert port_of(url) == port, "devices of live nodes stay where they are"


async def test_a_drained_node_gets_no_devices_and_the_command_line_sees_it(fleet):
    a, b = await fleet(2)
    status, body = await a.post("/api/nodes/%s/drain" % b.server.node.id, None)
    assert status == 202 and body["state"] == "draining"
    await eventually(lambda: b.server.exit_requested.is_set())     # it drained and asks to stop
    for i in range(10):
        assert port_of((await ota(b, "d%d" % i))["url"]) == a.server.ws.port
    status, listed = await a.get("/api/nodes")
    states = {n["node_id"]: (n["state"], n["live"]) for n in listed["nodes"]}
    assert states[b.server.node.id] == ("draining", True) and states[a.server.node.id] == ("serving", True)
    async with a.http.get(b.base + "/health") as r:
        assert (await r.json())["status"] == "draining"


async def test_commands_go_out_once_and_any_node_matches_the_ack(fleet, broker):
    nodes = await fleet(3)
    async with ControlBoard(broker.port, "kid") as device:
        for n in nodes:
            status, body = await n.post("/api/devices/kid/tasks", LESSON, wait=5)
            assert status == 200 and body["ack"]["ok"]
        got = [await device.next_request() for _ in range(3)]
        assert len({r["header"]["req_id"] for _, r in got}) == 3
        assert await device.no_request(0.5), "each command went out once"
        status, d = await nodes[1].get("/api/devices/kid")
        assert [r["ack"]["ok"] for r in d["recent_requests"]] == [True, True, True]


async def test_a_device_token_from_one_node_is_good_on_every_node(fleet):
    nodes = await fleet(3, auth={"tokens": ["fleet-token"]})
    tokens = {n.server.control.devices.creds.device_token("kid") for n in nodes}
    assert len(tokens) == 1
    token = tokens.pop()
    for n in nodes:
        assert n.server.ws.device_token_ok("kid", token)
        ws = await ota(n, "kid", token)
        assert ws["token"] == token


async def test_schedules_stored_while_the_nodes_had_no_broker_are_sent_once_by_three_nodes(fleet, broker):
    """120 schedules for 15 devices, stored through three nodes while none
    of them reaches the broker; when they are back every node's dispatcher
    competes for them: each reaches its device once and is acked active."""
    nodes = await fleet(3)
    devices = ["kid%02d" % i for i in range(15)]
    seen = collections.defaultdict(set)
    async with contextlib_multi([ControlBoard(broker.port, d) for d in devices]) as devs:
        for n in nodes:
            await n.server.control.link.stop()
        for i in range(120):
            dev = devices[i % 15]
            status, err = await nodes[i % 3].post("/api/devices/%s/schedules" % dev,
                                                  {"alarm_id": "a%03d" % i, "time": "07:30", "pending_task": LESSON})
            assert status == 503 and err["schedule"]["state"] == "pending_ack"
        await asyncio.sleep(0.5)      # what they sent before is old enough to send again
        await asyncio.gather(*[n.server.control.link.start() for n in nodes])

        async def all_active():
            if await nodes[0].server.control.store.deliveries.due_count():
                return False
            for dev in devices:
                _, listed = await nodes[0].get("/api/devices/%s/schedules" % dev)
                if any(s["state"] != "active" for s in listed["schedules"]):
                    return False
            return True
        await eventually(all_active, timeout=30)
        for d in devs:
            while not d.requests.empty():
                _, r = d.requests.get_nowait()
                seen[r["payload"]["alarm_id"]].add(r["header"]["req_id"])
    assert len(seen) == 120 and all(len(ids) == 1 for ids in seen.values())
    ran = collections.Counter(alarm for d in devs for alarm, _, _ in d.runs)
    assert len(ran) == 120 and set(ran.values()) == {1}, "each run once by its board"
    assert sum(n.server.control.delivered for n in nodes) == 120
    assert sum(1 for n in nodes if n.server.control.delivered) >= 2, "the nodes shared the work"


class contextlib_multi:
    def __init__(self, cms):
        self.cms = cms

    async def __aenter__(self):
        for cm in self.cms:
            await cm.__aenter__()
        return self.cms

    async def __aexit__(self, *exc):
        for cm in self.cms:
            await cm.__aexit__(*exc)


async def test_the_command_line_lists_nodes_and_drains_one(fleet):
    import sys
    a, b = await fleet(2)

    async def cli(*args):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "xiaozhi_server", "node", *args, "--server", a.base,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        return proc.returncode, out.decode(), err.decode()

    rc, out, err = await cli("list")
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == 2 and all("serving" in line and "live" in line for line in lines)
    assert any(line.startswith("*") and a.server.node.id in line for line in lines)
    rc, out, err = await cli("drain", b.server.node.id, "--wait", "0")
    assert rc == 0 and "is draining" in out, err
    await eventually(lambda: b.server.exit_requested.is_set())
    rc, out, _ = await cli("list")
    assert any(b.server.node.id in line and "draining" in line for line in out.splitlines())
    rc, _, err = await cli("drain", "no-such-node", "--wait", "0")
    assert rc == 1 and "no node no-such-node" in err
