"""A child process's stderr, forwarded to our log and remembered briefly.

The MCP stdio transport owns the child's stdin/stdout; its stderr goes to
a pipe read here on the event loop (no thread, never blocking), so a
traceback at start-up becomes the reason logged for a failed server.
"""
import asyncio
import collections
import logging
import os

KEEP_LINES = 8      # enough for the end of a Python traceback
MAX_LINE = 2000     # one absurd line must not fill the log


class StderrTail:
    def __init__(self, label, logger=None):
        self.label = label
        self.log = logger or logging.getLogger(__name__)
        self._lines = collections.deque(maxlen=KEEP_LINES)
        self._write_file = None
        self._transport = None
        self._task = None

    async def open(self):
        """The file to hand to the process as its stderr."""
        read_fd, write_fd = os.pipe()
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        self._transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", 0))
        self._write_file = os.fdopen(write_fd, "w")
        self._task = asyncio.create_task(self._pump(reader), name="stderr-%s" % self.label)
        return self._write_file

    def spawned(self):
        """Drop our copy of the write end, so EOF comes when the child exits."""
        if self._write_file is not None:
            self._write_file.close()
            self._write_file = None

    async def _pump(self, reader):
        while True:
            try:
                line = await reader.readline()
            except (ValueError, asyncio.LimitOverrunError):
                # Over the reader's line limit: skip it, keep the rest.
                continue
            except OSError:
                break
            if not line:
                break
            text = line.decode("utf-8", "replace").rstrip()[:MAX_LINE]
            if text:
                self._lines.append(text)
                self.log.info("[%s] %s", self.label, text)

    def last_lines(self):
        return list(self._lines)

    async def aclose(self, timeout=2.0):
        """Wait for the pipe's EOF (bounded), then release it."""
        self.spawned()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout)
            except asyncio.TimeoutError:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self._transport is not None:
            self._transport.close()
            self._transport = None
