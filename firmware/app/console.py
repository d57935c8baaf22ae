# The line console: the board's UART REPL and the host simulation's stdin
# speak the same commands, one per line:
#
#   wake [WORD]     the wake word (default 你好小智)
#   phrase TEXT     an offline command word
#   button          a press of the boot button
#   mic PATH        feed the mic: a directory of Opus frames (any
#                   interpreter) or a 16 kHz mono WAV (host CPython)
#   warp SECONDS    advance the simulated clock and RTC (host only)
#   status          a "status" event: device state and player status
#   reboot          reset the board (the next boot has wake_cause reset)
#   quit            leave without standby (host)
#
# Answers are events on the bus, so with --json every line on stdout is one
# JSON object: an unknown or failing line is an "error" event naming it.
# End of input changes nothing: the device runs on until quit or standby.
import sys

import asyncio

_MP = sys.implementation.name == "micropython"
DEFAULT_WAKE_WORD = "你好小智"


class _StdinLines:
    # MicroPython has no async generators: a reader object instead. CPython
    # reads stdin on a daemon thread, so a pending read never keeps the
    # process alive after standby or quit.
    def __init__(self):
        self._r = None
        if _MP:
            self._r = asyncio.StreamReader(sys.stdin)
            return
        import threading
        self._loop = asyncio.get_event_loop()
        self._lines = []
        self._ev = asyncio.Event()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        while True:
            line = sys.stdin.readline()
            self._loop.call_soon_threadsafe(self._put, line)
            if not line:
                return

    def _put(self, line):
        self._lines.append(line)
        self._ev.set()

    async def readline(self):
        """The next line without its newline, or None at end of input."""
        if _MP:
            line = await self._r.readline()
            return line.decode().strip() if line else None
        while not self._lines:
            self._ev.clear()
            await self._ev.wait()
        line = self._lines.pop(0)
        return line.strip() if line else None


def _feed_mic(mic, path):
    import os
    try:
        is_dir = os.stat(path)[0] & 0x4000 != 0
    except OSError:
        raise ValueError("no such file or directory: %s" % path)
    if is_dir:
        mic.feed_frames(path)
    else:
        mic.feed_wav(path)
    return mic.pending()


def _wake_args(arg):
    """'WORD @LEVEL' -> (word, level dBFS); the level is optional."""
    word, sep, level = arg.rpartition(" @")
    if not sep and arg.startswith("@"):
        word, level = "", arg[1:]
    try:
        return word.strip(), float(level)
    except ValueError:
        return arg, None


def execute(device, line):
    """Run one console line against the device; False for an unknown line."""
    cmd, _, arg = line.partition(" ")
    arg = arg.strip()
    b = device.board
    if cmd == "wake":
        word, level = _wake_args(arg)
        b.voice.inject_wake(word or DEFAULT_WAKE_WORD, level)
    elif cmd == "phrase" and arg:
        b.voice.inject_phrase(arg)
    elif cmd == "button":
        b.buttons["boot"].press()
    elif cmd == "mic" and arg and hasattr(b.mic, "feed_frames"):
        device.bus.emit("mic", path=arg, frames=_feed_mic(b.mic, arg))
    elif cmd == "warp" and arg and hasattr(b.clock, "warp"):
        b.clock.warp(float(arg))
        device.bus.emit("warp", seconds=float(arg), time=b.clock.time())
    elif cmd == "status":
        st = device.player.status()
        device.bus.emit("status", state=device.state.state, player=st["state"],
                        name=st["name"], repeat_left=st["repeat_left"])
    elif cmd == "reboot":
        b.power.reset()
    elif cmd == "quit":
        device.quit()
    else:
        return False
    return True


async def run(device):
    lines = _StdinLines()
    while True:
        line = await lines.readline()
        if line is None:
            return
        if not line:
            continue
        try:
            if not execute(device, line):
                device.bus.emit("error", message="unknown command: %s" % line)
        except SystemExit:
            raise  # reboot on the host ends the process
        except Exception as e:  # a bad line must not stop the device
            device.bus.emit("error", message="%s: %r" % (line, e))
