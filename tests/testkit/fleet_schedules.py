"""Schedules stored through every node while the broker was down, then sent
by the nodes when it is back, with one node killed (kill -9) while it holds
claimed deliveries: the scenario of the rig's test and of `make bench
ARGS=fleet`. Run it with the calling thread on the rig's "parents" host.

    figures = await schedules_through_a_kill(rig, count=1000)

The boards run the firmware's own request handling (testkit/control_board.py)
with sessions the broker keeps (persistent, QoS 1), so what is sent while
one reconnects waits for it. The board runs a req_id once: a request
repeated on the wire with the same req_id (a dead node's claim taken over)
is counted apart, not as a second run.
"""
import asyncio
import collections
import shutil
import signal
import tempfile
import threading
import time

import aiohttp

from testkit.control_api import eventually
from testkit.control_board import ControlBoard
from testkit.fleet_rig import API_HEADERS

LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}
PER_DEVICE = 8      # the board holds 8 alarms


def _board(rig, device_id, nvs_dir, runs, received):
    return ControlBoard(1883, device_id, "%s/%s.json" % (nvs_dir, device_id), runs=runs, received=received,
                        host=rig.broker_ip, persistent=True, identifier="board-" + device_id)


def _killer(rig, stop, killed):
    """Watch the store for a node holding claims; freeze it (SIGSTOP) while
    it holds them, then kill -9 it: a node killed mid-claim."""
    while not stop.is_set():
        held = rig.sql("SELECT claimed_by, COUNT(*) FROM schedules WHERE claimed_by IS NOT NULL "
                       "GROUP BY claimed_by ORDER BY 2 DESC LIMIT 1")
        if held:
            node_id, n = held[0]
            name = rig.node_name(node_id)
            proc = rig.nodes[name]
            proc.send_signal(signal.SIGSTOP)
            still = rig.sql("SELECT COUNT(*) FROM schedules WHERE claimed_by = %s", (node_id,))[0][0]
            if still:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
                killed.update(name=name, node_id=node_id, claims=still, at=time.monotonic())
                return
            proc.send_signal(signal.SIGCONT)
        time.sleep(0.005)


async def schedules_through_a_kill(rig, count=240, kill=True, timeout=120):
    devices = ["sched%03d" % i for i in range((count + PER_DEVICE - 1) // PER_DEVICE)]
    runs, seen = [], []
    nvs_dir = tempfile.mkdtemp(prefix="fleet-boards-")
    boards = [_board(rig, d, nvs_dir, runs, seen) for d in devices]
    for b in boards:
        await b.__aenter__()
    names = list(rig.nodes)
    async with aiohttp.ClientSession(headers=API_HEADERS) as http:
        async def api(name, method, path, body=None):
            async with http.request(method, "http://%s:8003%s" % (rig.node_ips[name], path), json=body) as r:
                return r.status, await r.json()

        rig.stop_broker()
        for b in boards:
            await b.__aexit__(None, None, None)

        async def all_lost_it():
            for name in names:
                _, d = await api(name, "GET", "/api/devices/x")
                if d["broker_connected"]:
                    return False
            return True
        await eventually(all_lost_it, 30)
        created = 0
        for i in range(count):
            status, body = await api(names[i % len(names)], "POST", "/api/devices/%s/schedules" % devices[i // PER_DEVICE],
                                     {"alarm_id": "s%04d" % i, "time": "07:30", "pending_task": LESSON})
            assert status == 503 and body["schedule"]["state"] == "pending_ack", body
            created += 1

        stop, killed = threading.Event(), {}
        watcher = threading.Thread(target=_killer, args=(rig, stop, killed), daemon=True) if kill else None
        if watcher:
            watcher.start()
        started = time.monotonic()
        rig.start_broker()
        for b in boards:     # the same boards connecting again: what they handled is kept
            await b.__aenter__()

        def settled():
            return rig.sql("SELECT COUNT(*) FROM schedules WHERE state != 'active' OR due_at IS NOT NULL")[0][0] == 0
        await eventually(settled, timeout)
        took = time.monotonic() - started
        stop.set()
        if watcher:
            watcher.join(10)
        await asyncio.sleep(0.5)    # a late repeat would show now
        for b in boards:
            await b.__aexit__(None, None, None)
    shutil.rmtree(nvs_dir, ignore_errors=True)

    per_alarm = collections.defaultdict(list)      # every request that reached a board
    for alarm_id, req_id, _ in seen:
        per_alarm[alarm_id].append(req_id)
    ran = collections.Counter(alarm_id for alarm_id, _, _ in runs)
    active = rig.sql("SELECT COUNT(*) FROM schedules WHERE state = 'active'")[0][0]
    return {"schedules": created, "active": active,
            "lost": created - len(ran),
            "run_once": sum(1 for n in ran.values() if n == 1),
            "doubled": sum(1 for n in ran.values() if n > 1),
            "repeated_same_req_id": sum(len(ids) - len(set(ids)) for ids in per_alarm.values()),
            "killed": killed.get("name"), "killed_holding": killed.get("claims", 0),
            "seconds": took}
