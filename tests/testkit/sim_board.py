"""tools/sim.py on a pseudo-terminal, as the HIL suite's board.

    board = SimBoard(state_dir, ws_url).start()   # waits for the pty
    board.port                                    # /dev/pts/N for a serial DUT
    board.stop()

The sim's own stdout/stderr go to STATE/../sim.log (kept for failures).
"""
import json
import os
import subprocess
import sys
import time

from testkit import ROOT


class SimBoard:
    def __init__(self, state_dir, server_url, *extra):
        self.state_dir = str(state_dir)
        self.args = [sys.executable, "tools/sim.py", "--pty", "--json", "--state", self.state_dir,
                     "--server", server_url, *extra]
        self.log_path = os.path.join(os.path.dirname(self.state_dir.rstrip("/")), "sim.log")
        self.proc = None
        self.port = None

    def start(self, timeout=20):
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.args, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for ev in self.events():
                if ev.get("event") == "pty":
                    self.port = ev["path"]
                    return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("the simulator gave no pty; its output:\n" + self.output())

    def output(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def events(self):
        out = []
        for line in self.output().splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

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
        if self.proc is not None:
            self._log.close()
