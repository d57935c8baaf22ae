"""The firmware's own test suite, run under the real MicroPython unix port
and under CPython: the same firmware logic must behave the same on both."""
import re
import subprocess
import sys

import pytest

from testkit import ROOT, firmware_env, tool

INTERPRETERS = {
    # 2 MB heap: room for the tests; the app's own 256 KB budget is tested apart.
    "micropython": lambda: [tool("micropython"), "-X", "heapsize=2M"],
    "cpython": lambda: [sys.executable],
}


@pytest.mark.parametrize("interp", sorted(INTERPRETERS))
def test_firmware_suite(interp):
    cmd = INTERPRETERS[interp]() + ["tests/firmware/run.py"]
    p = subprocess.run(cmd, cwd=ROOT, env=firmware_env(), capture_output=True,
                       text=True, timeout=600)
    out = p.stdout + p.stderr
    m = re.search(r"^(\d+) passed, (\d+) failed$", p.stdout, re.M)
    assert m, "no closing line from the firmware runner:\n" + out
    failures = [l for l in p.stdout.splitlines() if l.startswith("FAIL")]
    assert int(m.group(2)) == 0 and p.returncode == 0, "\n".join(failures) + "\n" + out[-4000:]
    assert int(m.group(1)) > 0
