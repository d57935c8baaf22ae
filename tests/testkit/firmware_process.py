"""The firmware app as a real subprocess on the simulated board.

    fw = await FirmwareProcess.start("micropython", state_dir, config)
    ev = await fw.wait_event("player", state="pass_end")
    await fw.send("wake")                   # a console line
    rc = await fw.wait_exit()

It runs `firmware/main.py` under the MicroPython unix port (256 KB heap,
the app's budget) or CPython, with --json so every device event is one
JSON line on stdout; log lines are kept too (fw.lines).
"""
import asyncio
import json
import pathlib
import shutil
import sys
import time

from testkit import ROOT, firmware_env, tool

FIXTURE_MP3 = ROOT / "tests/firmware/data/cbr_1500ms_notag.mp3"   # a real 1.5 s MP3


def command(interp):
    if interp == "micropython":
        return [tool("micropython"), "-X", "heapsize=256K"]
    return [sys.executable]


def prepare_state(state_dir, config, mp3_names=("lesson1.mp3",)):
    state = pathlib.Path(state_dir)
    (state / "sd").mkdir(parents=True, exist_ok=True)
    for n in mp3_names:
        shutil.copy(FIXTURE_MP3, state / "sd" / n)
    (state / "sd" / "notes.txt").write_text("not audio\n")
    (state / "config.json").write_text(json.dumps(config))
    return state


class FirmwareProcess:
    def __init__(self, proc):
        self.proc = proc
        self.events = []     # (t, dict)
        self.lines = []      # every stdout/stderr line
        self._changed = asyncio.Event()
        self._readers = [asyncio.get_running_loop().create_task(self._read(proc.stdout)),
                         asyncio.get_running_loop().create_task(self._read(proc.stderr))]

    @classmethod
    async def start(cls, interp, state_dir, extra_args=()):
        proc = await asyncio.create_subprocess_exec(
            *command(interp), "firmware/main.py", "--state", str(state_dir), "--json", *extra_args,
            cwd=ROOT, env=firmware_env(), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        return cls(proc)

    async def _read(self, stream):
        while True:
            line = await stream.readline()
            if not line:
                self._changed.set()
                return
            text = line.decode(errors="replace").rstrip("\n")
            self.lines.append(text)
            if text.startswith("{"):
                try:
                    self.events.append((time.monotonic(), json.loads(text)))
                except ValueError:
                    pass
            self._changed.set()

    def find(self, event, since=0, **fields):
        return [e for t, e in self.events if t >= since and e.get("event") == event
                and all(e.get(k) == v for k, v in fields.items())]

    async def wait_event(self, event, timeout=15, since=0, **fields):
        deadline = time.monotonic() + timeout
        while True:
            hits = self.find(event, since, **fields)
            if hits:
                return hits[0]
            left = deadline - time.monotonic()
            if left <= 0 or (self.proc.returncode is not None and self._readers[0].done()):
                raise AssertionError("no %s %r; output:\n%s" % (event, fields, "\n".join(self.lines[-60:])))
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def send(self, line):
        self.proc.stdin.write((line + "\n").encode())
        await self.proc.stdin.drain()

    async def wait_exit(self, timeout=15):
        try:
            rc = await asyncio.wait_for(self.proc.wait(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError("firmware still running; output:\n" + "\n".join(self.lines[-60:]))
        await asyncio.gather(*self._readers)
        return rc

    async def stop(self):
        if self.proc.returncode is None:
            try:
                await self.send("quit")
                await asyncio.wait_for(self.proc.wait(), 5)
            except (asyncio.TimeoutError, ConnectionError, BrokenPipeError):
                self.proc.kill()
                await self.proc.wait()
        for r in self._readers:
            r.cancel()
