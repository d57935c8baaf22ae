"""Every firmware source file must compile with mpy-cross: the board runs
MicroPython, and CPython accepting a file proves nothing about that."""
import subprocess

import pytest

from testkit import ROOT, tool

FILES = sorted(p for p in (ROOT / "firmware").rglob("*.py"))


def test_there_is_firmware_to_compile():
    assert any(p.name == "proto.py" for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_mpy_cross_compiles(path, tmp_path):
    out = tmp_path / (path.stem + ".mpy")
    p = subprocess.run([tool("mpy-cross"), "-o", str(out), str(path)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert out.stat().st_size > 0
