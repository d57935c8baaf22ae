"""Hosts on a private network for tests: Linux network namespaces joined by
veth links to one bridge (iproute2; needs root).

    net = Network.create()              # pytest.skip-able NetworkUnavailable if it cannot
    db = net.add_host("db")             # a namespace with eth0 = 10.77.0.2
    proc = net.popen("db", ["postgres", ...])   # a process on that host
    with net.inside("parents"):         # sockets this thread makes now live on that host
        ...
    net.set_link("n2", up=False)        # cut a host off (ip link set ... down), and back
    net.close()                         # every process ended, every namespace gone

The bridge lives in a namespace of its own too, so nothing in the
machine's own network changes. Names carry the creating process's id
(`xzt<pid>-...`): namespaces a crashed run left behind are removed by the
next run when that process is gone.
"""
import contextlib
import ctypes
import os
import re
import signal
import subprocess

CLONE_NEWNET = 0x40000000
PREFIX = "xzt"
SUBNET = "10.77.0."


class NetworkUnavailable(Exception):
    pass


def _ip(*args, check=True):
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise NetworkUnavailable("ip %s: %s" % (" ".join(args), (r.stderr or r.stdout).strip()))
    return r


def _setns(fd):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns failed")


def remove_stale():
    """Namespaces of earlier runs whose process is gone."""
    r = _ip("netns", "list", check=False)
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        m = re.match(r"^%s(\d+)-" % PREFIX, name)
        if m and not os.path.exists("/proc/%s" % m.group(1)):
            _ip("netns", "del", name, check=False)


class Network:
    def __init__(self):
        self.tag = "%s%d" % (PREFIX, os.getpid())
        self.switch = self.tag + "-sw"
        self.hosts = {}          # name -> ip
        self._procs = []
        self._namespaces = []
        self._n = 1

    @classmethod
    def create(cls):
        if os.geteuid() != 0:
            raise NetworkUnavailable("network namespaces need root")
        remove_stale()
        net = cls()
        try:
            net._add_ns(net.switch)
            _ip("-n", net.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", net.switch, "link", "set", "br0", "up")
        except BaseException:
            net.close()
            raise
        return net

    def ns(self, host):
        return "%s-%s" % (self.tag, host)

    def _add_ns(self, name):
        _ip("netns", "add", name)
        self._namespaces.append(name)
        _ip("-n", name, "link", "set", "lo", "up")

    def add_host(self, host):
        """A host on the bridge: its namespace, eth0 with the next address; its IP."""
        self._n += 1
        ip = SUBNET + str(self._n)
        ns = self.ns(host)
        self._add_ns(ns)
        port = "p%d-%d" % (os.getpid() % 100000, self._n)     # the bridge's side (<= 15 characters)
        _ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port, "netns", self.switch)
        _ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
        _ip("-n", ns, "addr", "add", ip + "/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        self.hosts[host] = ip
        return ip

    def set_link(self, host, up):
        """ip link set eth0 up/down on that host: cut off from every other host, or back."""
        _ip("-n", self.ns(host), "link", "set", "eth0", "up" if up else "down")

    def command(self, host, argv):
        return ["ip", "netns", "exec", self.ns(host), *argv]

    def popen(self, host, argv, **kw):
        proc = subprocess.Popen(self.command(host, argv), **kw)
        self._procs.append(proc)
        return proc

    def track(self, proc):
        """A process started elsewhere (asyncio) to end with the network."""
        self._procs.append(proc)
        return proc

    @contextlib.contextmanager
    def inside(self, host):
        """Run this thread's socket calls on that host while the block runs."""
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open("/run/netns/%s" % self.ns(host), os.O_RDONLY)
        try:
            _setns(target)
            yield
        finally:
            _setns(own)
            os.close(own)
            os.close(target)

    def close(self):
        for p in self._procs:
            try:
                if getattr(p, "returncode", None) is None:
                    p.send_signal(signal.SIGKILL)
            except (ProcessLookupError, OSError):
                pass
        for p in self._procs:
            if isinstance(p, subprocess.Popen):
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    pass
        for name in reversed(self._namespaces):
            _ip("netns", "del", name, check=False)
        self._namespaces = []
