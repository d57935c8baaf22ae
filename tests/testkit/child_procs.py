"""The child processes of this test process, read from /proc (Linux).

    from testkit.child_procs import children, wait_gone
    pids = children(match="translate.server")   # {pid: cmdline}
    os.kill(pid, signal.SIGKILL); assert wait_gone(pid)

A zombie (exited, not reaped) still counts as a child here: a test that
checks "no child left" also catches a parent that forgot to wait().
"""
import os
import time


def _stat(pid):
    with open("/proc/%d/stat" % pid, "rb") as f:
        raw = f.read().decode("utf-8", "replace")
    # The command name sits in parentheses and may contain spaces.
    rest = raw[raw.rindex(")") + 2:].split()
    return rest[0], int(rest[1])          # state, ppid


def _cmdline(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()


def children(parent=None, match=None):
    """{pid: cmdline} of the direct children of `parent` (default: us)."""
    parent = os.getpid() if parent is None else parent
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            state, ppid = _stat(pid)
            if ppid != parent:
                continue
            cmd = _cmdline(pid) or "[%s]" % state
        except (OSError, ValueError):
            continue
        if state == "Z":
            cmd = "<zombie> " + cmd
        if match is None or match in cmd:
            found[pid] = cmd
    return found


def alive(pid):
    try:
        state, _ = _stat(pid)
    except (OSError, ValueError):
        return False
    return state != "Z"


def wait_gone(pid, timeout=5.0):
    """True once `pid` has exited (zombie or reaped) within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.01)
    return not alive(pid)
