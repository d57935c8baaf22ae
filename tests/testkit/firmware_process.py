"""The firmware app as a real subprocess on the simulated board.

    fw = await FirmwareProcess.start("micropython", state_dir)
    ev = await fw.wait_event("player", state="pass_end")
    mark = fw.mark(); await fw.send("wake")          # a console line
    await fw.wait_event("state", since=mark, state="listening")
    rc = await fw.wait_exit()

It runs `firmware/main.py` under the MicroPython unix port (testkit.SOURCE_HEAP: the board's 256 KB plus
the code compiled from source) or CPython, with --json so every device event is one
JSON line on stdout; log lines are kept too (fw.lines). The console is
read by testkit/consoles.py's PipeConsole.
"""
import json
import pathlib
import shutil
import sys

from testkit import ROOT, SOURCE_HEAP, firmware_env, tool
from testkit.consoles import PipeConsole

FIXTURE_MP3 = ROOT / "tests/firmware/data/cbr_1500ms_notag.mp3"   # a real 1.5 s MP3


def command(interp):
    if interp == "micropython":
        return [tool("micropython"), "-X", "heapsize=" + SOURCE_HEAP]
    return [sys.executable]


def prepare_state(state_dir, config, mp3_names=("lesson1.mp3",)):
    state = pathlib.Path(state_dir)
    (state / "sd").mkdir(parents=True, exist_ok=True)
    for n in mp3_names:
        shutil.copy(FIXTURE_MP3, state / "sd" / n)
    (state / "sd" / "notes.txt").write_text("not audio\n")
    (state / "config.json").write_text(json.dumps(config))
    return state


class FirmwareProcess(PipeConsole):
    @classmethod
    async def start(cls, interp, state_dir, extra_args=()):
        return await super().start(
            [*command(interp), "firmware/main.py", "--state", str(state_dir), "--json", *extra_args],
            env=firmware_env(), name="the firmware (%s)" % interp)

    async def stop(self):
        await self.close(quit_first=True)
