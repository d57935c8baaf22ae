# File helpers that work on the MicroPython unix port and on CPython
# (MicroPython has no os.path, pathlib or shutil).
import os

try:
    _fsync = os.fsync
except AttributeError:  # MicroPython: flush() reaches the OS, no fsync call
    _fsync = None

_S_IFDIR = 0x4000


def join(*parts):
    out = ""
    for p in parts:
        if not p:
            continue
        if out and not out.endswith("/"):
            out += "/"
        out += p
    return out


def stat_or_none(path):
    try:
        return os.stat(path)
    except OSError:
        return None


def exists(path):
    return stat_or_none(path) is not None


def isdir(path):
    st = stat_or_none(path)
    return st is not None and bool(st[0] & _S_IFDIR)


def size(path):
    return os.stat(path)[6]


def makedirs(path):
    """mkdir -p."""
    if not path or isdir(path):
        return
    parent = path.rsplit("/", 1)[0] if "/" in path.rstrip("/") else ""
    if parent and parent != path:
        makedirs(parent)
    try:
        os.mkdir(path)
    except OSError:
        if not isdir(path):
            raise


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def read_json(path):
    """The JSON a state file holds, or None if it is missing or unreadable."""
    import json
    if not exists(path):
        return None
    try:
        return json.loads(read_bytes(path))
    except ValueError:
        return None


def write_atomic(path, data):
    """Replace `path` with `data` so that a crash leaves old or new, never half.

    Write a temporary sibling, flush (and fsync where the OS call exists),
    then rename over the target: rename is atomic on POSIX file systems.
    """
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        if _fsync is not None:
            _fsync(f.fileno())
    os.rename(tmp, path)


def remove_if_exists(path):
    try:
        os.remove(path)
    except OSError:
        pass
