"""A pseudo-terminal that behaves like the board's UART: the same lines go
out (log lines and JSON events) and command lines come in. A test harness
(pytest-embedded's serial DUT) opens `path` like /dev/ttyACM0.

The slave side is put in raw mode (no echo, no CR/LF mangling) and kept
open here, so a reader may come and go without the sim seeing a hang-up.
Limit: the kernel holds about 4 KB for a reader that has not opened the
port yet; after that, lines are dropped rather than stalling the board.
"""
import errno
import os
import threading
import tty


class PtyPort:
    def __init__(self, on_line):
        self.master, self._slave = os.openpty()
        tty.setraw(self._slave)
        self.path = os.ttyname(self._slave)
        os.set_blocking(self.master, False)
        self._on_line = on_line
        self._closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def write_line(self, text):
        data = (text + "\n").encode()
        try:
            os.write(self.master, data)
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EIO):
                raise

    def _read(self):
        import select
        buf = b""
        while not self._closed:
            r, _, _ = select.select([self.master], [], [], 0.5)
            if not r:
                continue
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                continue  # EIO: nobody has the port open right now
            buf += chunk.replace(b"\r", b"\n")
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                text = line.decode("utf-8", "replace").strip()
                if text:
                    self._on_line(text)

    def close(self):
        self._closed = True
        for fd in (self.master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass
