"""tools/sim.py as a real subprocess, read as a user's tool would read it:
one JSON event per line on stdout (--json), each checked against the
console event schema (sim.event) as it arrives.

    sim = await SimProcess.start(state_dir, "--server", url)
    ev = await sim.wait_event("reply")
    await sim.send("say Hello")
    rc = await sim.wait_exit()
"""
import asyncio
import json
import sys
import time

from testkit import ROOT
from xiaozhi_server import protocol as proto


class SimProcess:
    def __init__(self, proc):
        self.proc = proc
        self.events = []
        self.bad_lines = []  # stdout lines that are not valid sim.event JSON
        self.stderr = []
        self._changed = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._readers = [loop.create_task(self._read_out()), loop.create_task(self._read_err())]

    @classmethod
    async def start(cls, state_dir, *args):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "tools/sim.py", "--json", "--state", str(state_dir), *args, cwd=ROOT,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        return cls(proc)

    async def _read_out(self):
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                self._changed.set()
                return
            text = line.decode().rstrip("\n")
            try:
                ev = json.loads(text)
                reason = proto.validate("sim.event", ev)
            except ValueError as e:
                ev, reason = None, str(e)
            if reason:
                self.bad_lines.append((text, reason))
            else:
                self.events.append(ev)
            self._changed.set()

    async def _read_err(self):
        while True:
            line = await self.proc.stderr.readline()
            if not line:
                return
            self.stderr.append(line.decode(errors="replace").rstrip("\n"))

    def find(self, event, **fields):
        return [e for e in self.events if e["event"] == event and all(e.get(k) == v for k, v in fields.items())]

    async def wait_event(self, event, timeout=20, after=0, **fields):
        """The first matching event among events[after:]."""
        deadline = time.monotonic() + timeout
        while True:
            hits = [e for e in self.events[after:] if e["event"] == event
                    and all(e.get(k) == v for k, v in fields.items())]
            if hits:
                return hits[0]
            left = deadline - time.monotonic()
            if left <= 0 or self._readers[0].done():
                raise AssertionError("no %s %r; events:\n%s\nstderr:\n%s" % (
                    event, fields, "\n".join(map(json.dumps, self.events[-40:])), "\n".join(self.stderr[-30:])))
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def send(self, line):
        self.proc.stdin.write((line + "\n").encode())
        await self.proc.stdin.drain()

    async def wait_exit(self, timeout=20):
        rc = await asyncio.wait_for(self.proc.wait(), timeout)
        await asyncio.gather(*self._readers)
        return rc

    async def close(self):
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        for r in self._readers:
            r.cancel()
