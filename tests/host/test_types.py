"""The server's type check is part of `make test`: mypy, pinned in
requirements.txt and configured in pyproject.toml ([tool.mypy]), over
server/xiaozhi_server. A test rather than a Makefile step, so `make test`
stays one pytest run: ARGS selects it like any test, a fresh clone needs
nothing else, and a failure is reported with the others, mypy's own lines
in the message."""
import subprocess
import sys

from testkit import ROOT


def test_the_server_type_checks():
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, "mypy found problems:\n" + r.stdout + r.stderr
