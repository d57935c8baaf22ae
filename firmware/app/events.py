# What the device tells the outside world: one bus, many listeners.
#
#   bus.emit("state", state="listening")
#   bus.emit("player", state="pass_end", name="a.mp3", repeat_left=1)
#
# The simulator prints these as JSON lines; on the board a UART console
# can print them the same way. A listener that fails is logged and skipped.
import json

import log

_log = log.get("events")


class Bus:
    def __init__(self):
        self._listeners = []

    def listen(self, fn):
        self._listeners.append(fn)

    def emit(self, event, **fields):
        fields["event"] = event
        for fn in self._listeners:
            try:
                fn(fields)
            except Exception as e:
                _log.error("event listener failed: %r", e)


def json_line_printer(write):
    """A listener that writes each event as one JSON line through write(str)."""
    def out(ev):
        write(json.dumps(ev) + "\n")
    return out
