"""tools/sim.py on a pseudo-terminal, as the HIL suite's board.

    board = SimBoard(state_dir, ws_url).start()   # waits for the pty event
    board.port                                    # /dev/pts/N for a serial DUT
    board.stop()

The sim's stdout/stderr are read into a ConsoleLog (board.log) and copied
to STATE/../sim.log (kept for failures).
"""
import os
import subprocess
import sys

from simkit.console import pump
from testkit import ROOT
from testkit.console_log import ConsoleLog


class SimBoard:
    def __init__(self, state_dir, server_url, *extra):
        self.state_dir = str(state_dir)
        self.args = [sys.executable, "tools/sim.py", "--pty", "--json", "--state", self.state_dir,
                     "--server", server_url, *extra]
        self.log_path = os.path.join(os.path.dirname(self.state_dir.rstrip("/")), "sim.log")
        self.log = ConsoleLog("the simulator")
        self.proc = None
        self.port = None

    def start(self, timeout=20):
        self.proc = subprocess.Popen(self.args, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        out = open(self.log_path, "w", encoding="utf-8")

        def on_line(text):
            if text is None:
                out.close()
                self.log.end()
                return
            out.write(text + "\n")
            out.flush()
            self.log.feed(text)
        pump(self.proc.stdout, on_line)
        try:
            self.port = self.log.wait("pty", timeout)["path"]
        except AssertionError as e:
            self.stop()
            raise RuntimeError("the simulator gave no pty: %s" % e) from None
        return self

    def wait_exit(self, timeout=20):
        return self.proc.wait(timeout)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
