"""The firmware's own test suite, run under the real MicroPython unix port
and under CPython: the same firmware logic must behave the same on both."""
import re
import subprocess
import sys

import pytest

from testkit import MICROPYTHON_BUILD, ROOT, SOURCE_HEAP, firmware_env, tool


def _micropython_small():
    if not MICROPYTHON_BUILD.exists():
        pytest.skip("needs the 32-bit build (make micropython): pip's port is 64-bit")
    return [str(MICROPYTHON_BUILD), "-X", "heapsize=" + SOURCE_HEAP]


INTERPRETERS = {
    # 2 MB heap: every test, including those that build inputs past the board's size.
    "micropython": lambda: [tool("micropython"), "-X", "heapsize=2M"],
    # The board's word size, with the heap the app gets when run from source
    # (testkit.SOURCE_HEAP); run.py skips the big-input tests by name.
    "micropython-small": _micropython_small,
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
