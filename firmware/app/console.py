# A minimal line console on stdin, for the host simulation and tests (the
# board's UART console will speak the same lines):
#
#   wake [WORD]     the wake word (default 你好小智)
#   phrase TEXT     an offline command word
#   button          a press of the boot button
#   warp SECONDS    advance the simulated clock (host only)
#   status          print the device state and the player status
#   quit            leave without standby
#
# Unknown lines are answered with "? line". End of input changes nothing:
# the device keeps running until quit or standby.
import sys

import asyncio

_MP = sys.implementation.name == "micropython"


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


def execute(device, line, write):
    """Run one console line against the device; False for an unknown line."""
    cmd, _, arg = line.partition(" ")
    arg = arg.strip()
    b = device.board
    if cmd == "wake":
        b.voice.inject_wake(arg or "你好小智")
    elif cmd == "phrase" and arg:
        b.voice.inject_phrase(arg)
    elif cmd == "button":
        b.buttons["boot"].press()
    elif cmd == "warp" and arg and hasattr(b.clock, "warp"):
        b.clock.warp(float(arg))
    elif cmd == "status":
        st = device.player.status()
        write("status state=%s player=%s name=%s repeat_left=%d\n" % (
            device.state.state, st["state"], st["name"], st["repeat_left"]))
    elif cmd == "quit":
        device.quit()
    else:
        return False
    return True


async def run(device, write):
    lines = _StdinLines()
    while True:
        line = await lines.readline()
        if line is None:
            return
        if not line:
            continue
        try:
            if not execute(device, line, write):
                write("? %s\n" % line)
        except Exception as e:  # a bad line must not stop the device
            write("! %s: %r\n" % (line, e))
