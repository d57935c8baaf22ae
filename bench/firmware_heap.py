"""Heap of the firmware frozen into the 32-bit unix port, as on the board.

    make micropython-frozen && .venv/bin/python bench/firmware_heap.py

Three runs, each a fresh board in a 256 KB heap (bench/heap_probe.py
samples the live heap): plain boot (voice server, no broker), the broker
configured (MQTT up, voice session up), and a lesson playing (a parents'
repeater task over MQTT until its first pass ends). Prints, per run, the
firmware's own "heap after boot" line and the sampled peak.
"""
import asyncio
import json
import pathlib
import re
import sys
import tempfile

import aiohttp

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tools")]

from testkit.control_api import Api, control_config  # noqa: E402
from testkit.fake_llm import FakeLLM  # noqa: E402
from testkit.firmware_process import prepare_state  # noqa: E402
from xiaozhi_server.server import XiaozhiServer  # noqa: E402

FROZEN = ROOT / "build/micropython/unix32-frozen/micropython"
HEAP = "256K"
DEVICE_ID = "02:00:00:00:e0:09"
LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3", "repeat": 1}}
AFTER_BOOT = re.compile(r"heap after boot: (\d+) used, (\d+) free")
PEAK = re.compile(r"heap-probe: peak (\d+) used, (\d+) free")
WAIT_S = 60


class Board:
    def __init__(self, proc):
        self.proc = proc
        self.lines = []
        self.after_boot = None
        self.peak = 0
        self.changed = asyncio.Event()

    async def read(self):
        while True:
            raw = await self.proc.stdout.readline()
            if not raw:
                self.changed.set()
                return
            line = raw.decode(errors="replace").rstrip("\n")
            self.lines.append(line)
            m = AFTER_BOOT.search(line)
            if m:
                self.after_boot = int(m.group(1))
            m = PEAK.search(line)
            if m:
                self.peak = max(self.peak, int(m.group(1)))
            self.changed.set()

    def event(self, name, **fields):
        for line in self.lines:
            if line.startswith("{"):
                e = json.loads(line)
                if e.get("event") == name and all(e.get(k) == v for k, v in fields.items()):
                    return e
        return None

    async def until(self, what, name, **fields):
        async def wait():
            while self.event(name, **fields) is None:
                if self.proc.returncode is not None:
                    raise RuntimeError("%s: the board exited:\n%s" % (what, "\n".join(self.lines[-20:])))
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(wait(), WAIT_S)


async def run(server, api, state, mqtt, lesson):
    cfg = {"server_url": server.ws.url, "ota_url": "", "clock_speed": 1}
    if mqtt:
        creds = (await server.control.devices.provision(DEVICE_ID))["mqtt"]
        cfg["mqtt"] = {"url": "mqtt://127.0.0.1:%d" % server.broker.port, "keepalive": 30,
                       "user": creds["username"], "password": creds["password"]}
    prepare_state(state, cfg)
    (state / "mac").write_text(DEVICE_ID.replace(":", ""))
    proc = await asyncio.create_subprocess_exec(
        str(FROZEN), "-X", "heapsize=" + HEAP, "bench/heap_probe.py", "--state", str(state), "--json",
        cwd=ROOT, env={"MICROPYPATH": ".frozen", "PATH": "/usr/bin:/bin"},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    board = Board(proc)
    reader = asyncio.create_task(board.read())
    try:
        await board.until("voice session", "state", state="listening")
        if mqtt:
            await board.until("broker", "mqtt", action="CONNECT")
        if lesson:
            status, body = await api.post("/api/devices/%s/tasks" % DEVICE_ID, LESSON, wait=10)
            if status >= 300:
                raise RuntimeError("task refused: %s %s" % (status, body))
            await board.until("lesson", "player", state="pass_end")
    finally:
        proc.stdin.write(b"quit\n")
        await proc.stdin.drain()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
        await reader
    return board


async def main():
    if not FROZEN.exists():
        sys.exit("%s is missing: make micropython-frozen" % FROZEN.relative_to(ROOT))
    rows = []
    for title, mqtt, lesson in (("plain boot", False, False), ("MQTT configured", True, False),
                                ("lesson playing (MQTT)", True, True)):
        with tempfile.TemporaryDirectory() as tmp, FakeLLM() as llm:
            llm.default_reply = "好的。"
            cfg = control_config(pathlib.Path(tmp) / "control.db")
            cfg["llm"] = {"type": "openai", "base_url": llm.base_url, "api_key": "x", "model": "fake"}
            server = XiaozhiServer(cfg, with_broker=True, with_mcp=False)
            await server.start()
            try:
                async with aiohttp.ClientSession() as http:
                    board = await run(server, Api(server, http), pathlib.Path(tmp) / "state", mqtt, lesson)
            finally:
                await server.stop()
        rows.append((title, board.after_boot, board.peak))
    print("firmware heap, frozen 32-bit unix port, -X heapsize=%s (%d bytes)" % (HEAP, 256 * 1024))
    print("%-24s %16s %16s" % ("run", "after boot", "peak (sampled)"))
    for title, after, peak in rows:
        print("%-24s %13.1f KB %13.1f KB" % (title, (after or 0) / 1024, peak / 1024))


if __name__ == "__main__":
    asyncio.run(main())
