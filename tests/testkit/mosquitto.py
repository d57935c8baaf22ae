"""A real mosquitto broker on a free loopback port, for tests.

    broker = Mosquitto().start()
    broker.url            # mqtt://127.0.0.1:PORT
    broker.stop(); broker.start()   # same port again: clients see an outage
    broker.connected_clients()      # client ids connected now, from the broker's log
    Mosquitto(tls=(cert, key))      # also mqtts:// on broker.tls_port with that certificate
"""
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_port():
    """A free loopback port OUTSIDE the kernel's ephemeral range.

    A broker port taken from that range can be handed out as the local
    port of a client's own connect attempt while the broker is down; TCP
    then connects the socket to itself (the client reads back its own
    CONNECT) and the broker can no longer bind the port."""
    import random
    lo, hi = _ephemeral_range()
    candidates = [p for p in range(20000, 32000) if not lo <= p <= hi] or list(range(hi + 1, 65000))
    for port in random.sample(candidates, 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port outside the ephemeral range")


def _listening(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Mosquitto:
    def __init__(self, port=None, tls=None):
        self.port = port or free_port()
        self.tls_port = free_port() if tls else None
        self.dir = tempfile.mkdtemp(prefix="test-mosquitto-")
        self.conf = os.path.join(self.dir, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n" % self.port)
            if tls:
                # Started by root, mosquitto would switch to its own user and
                # could not read a key in a test's private folder.
                f.write("user %s\nlistener %d 127.0.0.1\ncertfile %s\nkeyfile %s\n"
                        % (pwd.getpwuid(os.getuid()).pw_name, self.tls_port, tls[0], tls[1]))
        self.proc = None
        self._log = ""

    @property
    def url(self):
        return "mqtt://127.0.0.1:%d" % self.port

    def start(self):
        exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self._log = ""
        self.proc = subprocess.Popen([exe, "-c", self.conf], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 5
        while not (_listening(self.port) and (self.tls_port is None or _listening(self.tls_port))):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("mosquitto did not start: %s" % self.proc.stderr.read().decode(errors="replace"))
            time.sleep(0.01)
        return self

    def connected_clients(self):
        """Client ids connected now, as the broker's own log says (read so far)."""
        if self.proc is not None:
            os.set_blocking(self.proc.stderr.fileno(), False)
            self._log += (self.proc.stderr.read() or b"").decode(errors="replace")
        clients = set()
        for line in self._log.splitlines():
            m = re.search(r"New client connected from \S+ as (\S+) \(", line)
            if m:
                clients.add(m.group(1))
            m = re.search(r"Client (\S+) (disconnected|closed its connection|has exceeded timeout)", line)
            if m:
                clients.discard(m.group(1))
        return clients

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
