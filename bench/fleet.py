"""`make bench ARGS=fleet`: three nodes, PostgreSQL and mosquitto on hosts of
their own (network namespaces, tests/testkit/fleet_rig.py; needs root).

1. Reconnect after a node dies: devices (the real firmware on the host HAL)
   spread over the nodes by OTA; the node holding the most is killed -9
   and each of its devices is asked something at once: the time until the
   reply's first words show on the device (connect refused, OTA again,
   another node, the reply). Repeated over `rounds` kills. Conversations
   continued: of those questions, how many reached the new node's LLM
   with the device's turn before the kill (the child's words carry the
   device's name, so each request is told apart).
2. Schedules exactly once: `count` schedules stored through the nodes while
   the broker was down, sent when it is back, the node holding claims
   killed -9 mid-way (tests/testkit/fleet_schedules.py).
3. First audio with 1, 2 and 3 nodes at the same load per node: stock-like
   wire devices (text turns: `listen detect` with the words, as stock
   servers take it) ask in a loop; first audio is words sent -> first reply
   frame. All nodes share this machine's cores, so more nodes also means
   more work on the same two cores: the figure says what one machine
   does, not what a fleet of machines does.
"""
import asyncio
import time

from testkit.fleet_rig import FleetRig, node_of
from testkit.fleet_schedules import schedules_through_a_kill
from testkit.wire_device import WireDevice

from .report import Figure, percentile

RECONNECT_TARGET_S = 5.0


def _carried(llm, question, earlier):
    """Did the LLM request answering `question` hold the turn `earlier`?"""
    for r in llm.requests:
        said = [m.get("content") for m in r.messages]
        if said and said[-1] == question:
            return earlier in said
    return False


async def _reconnects(rig, devices_per_node, rounds):
    """Seconds until each moved device was answered again; conversations
    continued (their earlier turn in the new node's LLM request) and moved."""
    names = ["b%02d" % i for i in range(devices_per_node * len(rig.nodes))]
    devices = {name: await rig.device(name) for name in names}
    took, continued, moved = [], 0, 0
    for r in range(rounds):
        home = {}
        for name, fw in devices.items():
            mark = fw.mark()
            home[name] = node_of(await rig.ask(fw, "hello, I am %s, round %d" % (name, r)))
            # The child heard the whole answer before the node dies.
            await fw.wait_event("subtitle", since=mark, role="assistant", text="Nice to talk with you.")
        victim = max(set(home.values()), key=lambda n: sum(1 for h in home.values() if h == n))
        mine = [name for name, n in home.items() if n == victim]
        rig.kill(victim)
        t0 = time.monotonic()

        async def again(name):
            question = "are you there, %s, round %d" % (name, r)
            now = node_of(await rig.ask(devices[name], question))
            return time.monotonic() - t0, _carried(rig.llms[now], question, "hello, I am %s, round %d" % (name, r))
        for seconds, carried in await asyncio.gather(*[again(name) for name in mine]):
            took.append(seconds)
            continued += carried
            moved += 1
        rig.start_node(victim)
    for fw in devices.values():
        await fw.close()
    return took, continued, moved


async def _first_audio(rig, nodes, per_node, seconds):
    """p50, p99 (s) and turns of text turns on the first `nodes` nodes."""
    times, failed = [], 0
    stop_at = time.monotonic() + seconds

    async def talk(name, i):
        nonlocal failed
        async with WireDevice(rig.ws_url(name), device_id="02:fa:00:%02x:%02x:%02x" % (nodes, ord(name[-1]), i)) as dev:
            await dev.hello()
            await dev.wait_json("tts", state="stop", timeout=20)     # chat's opener line first
            while time.monotonic() < stop_at:
                t = time.monotonic()
                await dev.detect("hello, how are you")
                try:
                    first = await dev.wait_for(lambda: [a for a, _ in dev.audio if a >= t], timeout=10)
                    times.append(first[0] - t)
                    await dev.wait_json("tts", state="stop", since=t, timeout=20)
                except AssertionError:
                    failed += 1
    await asyncio.gather(*[talk(name, i) for name in list(rig.nodes)[:nodes] for i in range(per_node)])
    return percentile(times, 50), percentile(times, 99), len(times), failed


async def _run(rig, devices_per_node, rounds, schedules, per_node, seconds):
    figures = []
    took, continued, moved = await _reconnects(rig, devices_per_node, rounds)
    figures += [Figure("answered again after kill -9, p50", percentile(took, 50), "s", RECONNECT_TARGET_S),
                Figure("answered again after kill -9, p99", percentile(took, 99), "s", RECONNECT_TARGET_S,
                       note="%d devices over %d kills" % (len(took), rounds)),
                Figure("conversations continued after kill -9", continued, "", moved, "higher",
                       note="of %d: the earlier turn in the new node's LLM request" % moved)]
    with rig.net.inside("parents"):
        f = await schedules_through_a_kill(rig, count=schedules)
        rig.start_node(f["killed"])
        figures += [
            Figure("schedules run exactly once", f["run_once"], "", f["schedules"], "higher",
                   note="of %d, node %s killed holding %d claims" % (f["schedules"], f["killed"], f["killed_holding"])),
            Figure("schedules lost", f["lost"], "", 0, "le"),
            Figure("schedules run twice", f["doubled"], "", 0, "le"),
            Figure("same req_id on the wire again", f["repeated_same_req_id"], "",
                   note="a dead node's claim taken over, or a late ack's re-send; the board runs a req_id once"),
            Figure("all acked active after the broker came back", f["seconds"], "s")]
        for n in (1, 2, 3):
            p50, p99, turns, failed = await _first_audio(rig, n, per_node, seconds)
            figures.append(Figure("first audio, %d node%s x %d sessions, p50" % (n, "s" if n > 1 else "", per_node),
                                  p50 * 1000, "ms", note="p99 %.0f ms, %d turns, %d failed" % (p99 * 1000, turns, failed)))
    return figures


def run_fleet(devices_per_node=3, rounds=3, schedules=1000, per_node=4, seconds=15.0):
    rig = FleetRig.start(nodes=3)
    try:
        return asyncio.run(_run(rig, devices_per_node, rounds, schedules, per_node, seconds))
    finally:
        rig.close()
