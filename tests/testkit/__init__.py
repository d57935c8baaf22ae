"""The rig shared by the host and HIL tests and the benches (imported as
`testkit`: tests/pyproject.toml, installed by `make setup`; docs/testing.md)."""
import os
import pathlib
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = pathlib.Path(sys.executable).parent


class MissingTool(RuntimeError):
    pass


# `make micropython`: the unix port with xzaudio, 32-bit like the board.
MICROPYTHON_BUILD = ROOT / "build/micropython/unix32/micropython"


def tool(name):
    """Path of a command from the project venv, else from PATH. For
    micropython, the project's own 32-bit build when it was built."""
    if name == "micropython" and MICROPYTHON_BUILD.exists():
        return str(MICROPYTHON_BUILD)
    p = VENV_BIN / name
    if p.exists():
        return str(p)
    found = shutil.which(name)
    if not found:
        raise MissingTool("%s is not installed: run `make setup`" % name)
    return found


def firmware_env(extra=None):
    """Environment for running firmware code on the host (either interpreter)."""
    env = dict(os.environ)
    path = "firmware/lib:firmware:tests/firmware"
    env["MICROPYPATH"] = path + ":.frozen"   # .frozen: the port's own asyncio
    env["PYTHONPATH"] = path
    env.update(extra or {})
    return env


# The heap the firmware gets when the tests run it from source on the
# 32-bit build. The board's budget is 256 KB, but there every module is
# frozen into flash, while from source the compiled code of the app and of
# the simulated board (hal/host: the DS3231, ES8311, ES7210 and PCA9557
# register models, which the board never holds) sits in the heap. With the
# codec models (issue 21) that exceeded 256 KB by a few KB through
# fragmentation, and the I2S clock model of round 2 (issue 32) with the
# WebSocket buffers made once at boot left a TLS board from source short
# again at 288 KB; the budget that counts is the frozen build's
# (`make bench-firmware-heap`, docs/firmware.md), well under 100 KB.
SOURCE_HEAP = "320K"
