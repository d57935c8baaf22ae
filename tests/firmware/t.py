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
