"""Thin adapters that feed a ConsoleLog (testkit/console_log.py) from where a
board's console is: a child process's pipes, a pseudo-terminal, or
pytest-embedded's pexpect DUT. Each offers the log's find/wait and send().

    c = await PipeConsole.start([python, "tools/sim.py", "--json", ...], events_only_stdout=True)
    await c.wait_event("state", state="idle");  await c.send("status");  rc = await c.wait_exit()

    pty = PtyConsole(path)               # the simulator's --pty
    await pty.log.wait_async("status");  pty.send("status");  pty.close()

    dut = PexpectConsole(dut)            # tests/hil: a serial DUT, real board or simulated
    dut.send("wake");  dut.next("state", state="listening")
"""
import asyncio
import os
import re

from simkit.console import pump
from testkit import ROOT
from testkit.console_log import ConsoleLog


class PipeConsole:
    """A child process on asyncio pipes: stdout and stderr lines into one log."""

    def __init__(self, proc, name, events_only_stdout=False):
        self.proc = proc
        self.log = ConsoleLog(name)
        loop = asyncio.get_running_loop()
        self._readers = [loop.create_task(self._read(proc.stdout, events_only_stdout)),
                         loop.create_task(self._read(proc.stderr, False))]
        loop.create_task(self._ended())

    @classmethod
    async def start(cls, argv, env=None, name=None, events_only_stdout=False):
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=ROOT, env=env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        return cls(proc, name or os.path.basename(argv[1] if len(argv) > 1 else argv[0]), events_only_stdout)

    async def _read(self, stream, events_only):
        while True:
            line = await stream.readline()
            if not line:
                return
            self.log.feed(line.decode(errors="replace").rstrip("\n"), events_only)

    async def _ended(self):
        await asyncio.gather(*self._readers, return_exceptions=True)
        self.log.end()

    @property
    def events(self):
        return self.log.events

    @property
    def lines(self):
        return self.log.lines

    def mark(self):
        return self.log.mark()

    def find(self, event, since=0, **fields):
        return self.log.find(event, since, **fields)

    async def wait_event(self, event, timeout=20, since=0, **fields):
        return await self.log.wait_async(event, timeout, since, **fields)

    async def send(self, line):
        self.proc.stdin.write((line + "\n").encode())
        await self.proc.stdin.drain()

    async def wait_exit(self, timeout=20):
        try:
            rc = await asyncio.wait_for(self.proc.wait(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError("%s still runs after %s s; the last lines:\n%s" % (
                self.log.name, timeout, "\n".join(self.log.lines[-60:]))) from None
        await asyncio.gather(*self._readers)
        return rc

    async def close(self, quit_first=False):
        """Stop the process (after a `quit` line if quit_first) and its readers."""
        if self.proc.returncode is None and quit_first:
            try:
                await self.send("quit")
                await asyncio.wait_for(self.proc.wait(), 5)
            except (asyncio.TimeoutError, ConnectionError):
                pass
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()
        self.proc.stdin.close()
        for r in self._readers:
            r.cancel()
        await asyncio.sleep(0)   # let the pipes' transports close inside the loop


class PtyConsole:
    """A pseudo-terminal's lines into a log (read on a thread until it closes)."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
        self.log = ConsoleLog(path)
        self._file = open(os.dup(self.fd), "rb")

        def on_line(text):
            if text is None:
                self._file.close()   # on the reader's thread, which owns it
                self.log.end()
            elif text:
                self.log.feed(text)
        pump(self._file, on_line)

    def send(self, line):
        os.write(self.fd, (line + "\r\n").encode())

    def close(self):
        os.close(self.fd)


_LINE = re.compile(rb"[^\r\n]*\r?\n")


class PexpectConsole:
    """pytest-embedded's DUT (pexpect over the serial port): lines are read
    when a wait needs them, so the DUT's own log keeps every one too."""

    def __init__(self, dut):
        import pexpect
        self.dut = dut
        self.log = ConsoleLog("the board's console")
        self.log.pull = self._pull
        self._timeout = pexpect.TIMEOUT

    def _pull(self, timeout):
        try:
            m = self.dut.expect(_LINE, timeout=max(0.05, timeout))
        except self._timeout:
            return
        text = m.group(0).decode("utf-8", "replace").rstrip("\r\n")
        if text:
            self.log.feed(text)

    @property
    def events(self):
        return self.log.events

    def send(self, line):
        self.dut.write(line)

    def next(self, event, timeout=20, **fields):
        """The first matching event among the lines not read yet (a wait
        reads lines only until its match, so this is the one after it)."""
        return self.log.wait(event, timeout, self.log.mark(), **fields)

    def seen(self, since, event, timeout=20, **fields):
        """The first matching event at or after index `since` (already read or
        still to come): for lines whose order the device does not promise."""
        return self.log.wait(event, timeout, since, **fields)
