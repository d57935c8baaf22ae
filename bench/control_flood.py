"""Section 7: a burst of parents' API calls to one device.

The real server (its own authenticated mosquitto, SQLite in a temp dir), the
board's MQTT side in a process of its own (bench/control_device.py: the
firmware's client and request handling, `work_ms` per request), and N
`POST /api/devices/{id}/tasks` over loopback HTTP, all started at once.
Run with the control plane's pacing on (the default: 8 awaiting acks per
device, 32 queued, 429 beyond) and off (`control.max_in_flight: 0`, how the
server sent before), against a board that handles a request before its
PUBACK (the broker's queue for it fills) and one that PUBACKs at once and
piles the work up in tasks (what app/control/remote.py does).

Figures per run: the HTTP answers (202 sent, 429 refused), what the broker
dropped (published minus what the board received; mosquitto queues at most
1000 QoS 1 messages per client and drops the rest), the most requests the
board had in hand at once, and how long until the board had handled the
last one.
"""
import asyncio
import collections
import json
import logging
import os
import subprocess
import sys
import tempfile
import time

import aiohttp

from xiaozhi_server import config as configmod

from .report import Figure

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from testkit.mosquitto import free_port  # noqa: E402
from testkit.node import start_node  # noqa: E402

DEVICE = "02:00:00:00:be:01"
TASK = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}


def _config(state, paced):
    cfg = configmod.merge(configmod.DEFAULTS, {
        "server": {"host": "127.0.0.1", "ws_port": 0, "http_port": 0},
        "llm": {"type": "none"},
        "mqtt": {"url": None, "port": free_port()},
        "control": {"db_path": os.path.join(state, "control.db"), "max_in_flight": 8 if paced else 0}})
    return cfg


async def _device(server, work_ms, mode):
    creds = await server.control.devices.provision(DEVICE)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, os.path.join(ROOT, "bench", "control_device.py"), str(server.broker.port), DEVICE,
        creds["mqtt"]["username"], creds["mqtt"]["password"], str(work_ms), mode,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    while True:
        line = await asyncio.wait_for(proc.stdout.readline(), 20)
        if not line:
            raise RuntimeError("the bench device ended before it connected")
        if line.startswith(b'{"ready"'):
            return proc


async def _totals(proc):
    proc.stdin.close()
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    lines = [l for l in out.decode().splitlines() if l.startswith("{")]
    return json.loads(lines[-1])


async def _handled(server, proc_totals_wanted, timeout_s):
    """Wait until the server has every ack it will get (all, or none new for 3 s)."""
    last, still = -1, 0
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        n = server.control.acks_recorded
        if n >= proc_totals_wanted:
            return n
        still = still + 1 if n == last else 0
        if still >= 30:
            return n
        last = n
        await asyncio.sleep(0.1)
    return last


async def one_run(requests, paced, mode, work_ms):
    with tempfile.TemporaryDirectory(prefix="bench-control-") as state:
        server = await start_node(_config(state, paced), with_broker=True)
        try:
            proc = await _device(server, work_ms, mode)
            url = "http://127.0.0.1:%d/api/devices/%s/tasks" % (server.http.port, DEVICE)
            statuses = collections.Counter()
            t0 = time.monotonic()
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100)) as http:
                async def post():
                    try:
                        async with http.post(url, json=TASK) as r:
                            statuses[r.status] += 1
                    except aiohttp.ClientError:
                        statuses["error"] += 1
                await asyncio.gather(*(post() for _ in range(requests)))
            answered_s = time.monotonic() - t0
            published = statuses[202]   # answered only once published
            acked = await _handled(server, published, 30 + requests * work_ms / 1000)
            dev = await _totals(proc)
            done_s = (dev["last_at"] - dev["first_at"]) if dev["last_at"] and dev["first_at"] else float("nan")
            return {"published": published, "accepted": statuses[202], "refused": statuses[429],
                    "other": ", ".join("%s: %d" % kv for kv in sorted(statuses.items(), key=str)
                                       if kv[0] not in (202, 429)) or "none", "answered_s": answered_s,
                "received": dev["received"], "handled": dev["handled"], "most_pending": dev["most_pending"],
                "acked": acked, "dropped": published - dev["received"], "board_s": done_s}
        finally:
            await server.stop()


async def run_control(requests=2000, work_ms=20):
    # The unpaced runs make the MQTT client warn per queued publish: the figures say it.
    import aiomqtt  # noqa: F401  (it sets its logger's level when imported)
    for name in ("mqtt", "xiaozhi_server.control", "xiaozhi_server.broker"):
        logging.getLogger(name).setLevel(logging.ERROR)
    figures = []
    for paced in (False, True):
        for mode in ("inline", "spawn"):
            r = await one_run(requests, paced, mode, work_ms)
            tag = "%s, board %s" % ("paced" if paced else "unpaced", mode)
            figures += [
                Figure("%s: sent (202)" % tag, r["accepted"], "reqs",
                       note="of %d POSTs over 100 connections; all answered within %.1f s"
                       % (requests, r["answered_s"])),
                Figure("%s: refused (429)" % tag, r["refused"], "reqs", note="other answers: %s" % r["other"]),
                Figure("%s: dropped by broker" % tag, r["dropped"], "msgs", limit=0 if paced else None,
                       better="le", note="published %d, the board received %d"
                       % (r["published"], r["received"])),
                Figure("%s: acks lost" % tag, r["handled"] - r["acked"], "msgs", limit=0 if paced else None,
                       better="le", note="the board handled %d, the server recorded %d acks"
                       % (r["handled"], r["acked"])),
                Figure("%s: board in hand" % tag, r["most_pending"], "reqs",
                       limit=8 if paced else None, better="le",
                       note="most requests the board held at once; handled all in %.1f s" % r["board_s"]),
            ]
    return figures
