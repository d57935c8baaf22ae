# Tiny assertion helpers for firmware tests (MicroPython has no unittest).
import os


def eq(got, want, what=""):
    if got != want:
        raise AssertionError("%s: got %r, want %r" % (what or "value", got, want))


def true(cond, what="condition"):
    if not cond:
        raise AssertionError(what)


def raises(exc, fn, *args, **kw):
    """Call fn; return the exception it raised, fail if it raised none."""
    try:
        fn(*args, **kw)
    except exc as e:
        return e
    raise AssertionError("%s did not raise %s" % (getattr(fn, "__name__", fn), exc.__name__))


_n = [0]


def _base():
    # One per run: suites run at once (two heaps, several checkouts) must
    # not share it. The unix port has no getpid; it has urandom.
    if not _run:
        tag = os.getpid() if hasattr(os, "getpid") else int.from_bytes(os.urandom(4), "little")
        _run.append("/tmp/xz-fw-%d" % tag)
    return _run[0]


_run = []


def tmpdir(tag="t"):
    """A fresh empty directory under /tmp for one test."""
    _n[0] += 1
    base = _base()
    for d in (base, "%s/%s%d" % (base, tag, _n[0])):
        try:
            os.mkdir(d)
        except OSError:
            pass
    path = "%s/%s%d" % (base, tag, _n[0])
    rmtree_contents(path)
    return path


def rmtree_contents(path):
    for name in os.listdir(path):
        p = path + "/" + name
        if os.stat(p)[0] & 0x4000:
            rmtree_contents(p)
            os.rmdir(p)
        else:
            os.remove(p)


CARD = "/xz-card"


def mount_card(path):
    """Mounts folder `path` at CARD through MicroPython's VFS only, as the
    board mounts its SD card (os.mount): C code opening CARD/... finds
    nothing there. Returns CARD; None without a vfs module (CPython)."""
    try:
        import vfs
    except ImportError:
        return None
    try:
        vfs.umount(CARD)
    except OSError:
        pass
    vfs.mount(vfs.VfsPosix(path), CARD)
    return CARD


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = f.read().split()
            return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 60999


async def serve(handle, host="127.0.0.1"):
    """asyncio.start_server on a free loopback port; returns (server, port).

    The unix port's sockets have no getsockname, so a server bound to port 0
    could not say where it listens. Instead: random ports below the kernel's
    ephemeral range (a client's own connect could be handed one inside it),
    the next one tried when a bind fails, so suites run at once (two heaps,
    several checkouts) never collide on a fixed number."""
    import asyncio
    lo, hi = _ephemeral_range()
    first, last = (20000, lo - 1) if lo > 21000 else (hi + 1, 65000)
    for _ in range(50):
        port = first + int.from_bytes(os.urandom(2), "little") % (last - first)
        try:
            return await asyncio.start_server(handle, host, port), port
        except OSError:
            continue
    raise OSError("no free loopback port")
