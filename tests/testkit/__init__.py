"""Helpers shared by the host and HIL tests (imported as `testkit`)."""
import os
import pathlib
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = pathlib.Path(sys.executable).parent


class MissingTool(RuntimeError):
    pass


def tool(name):
    """Path of a command from the project venv, else from PATH."""
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
