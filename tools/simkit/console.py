"""Reading the board's console: one line at a time, each either an event
(a JSON object with an "event" key on one line) or a log line
(docs/sim.md, "Events"). The simulator reads the firmware child this way,
and the tests read the simulator, the firmware and the pty through the same
two functions (tests/testkit/console_log.py), so there is one definition of
what an event line is.

    ev = parse('{"event": "state", "state": "idle"}')   # the dict; None for a log line
    pump(proc.stdout, on_line)                          # on_line(text) per line, on_line(None) at the end
"""
import json
import threading


def parse(text):
    """The event a console line carries, or None when it is a log line."""
    if not text.startswith("{"):
        return None
    try:
        ev = json.loads(text)
    except ValueError:
        return None
    return ev if isinstance(ev, dict) and "event" in ev else None


def pump(stream, on_line):
    """Read a binary stream (a pipe, a pty) to its end on a daemon thread:
    on_line(text) for each line without its line end, then on_line(None).
    A pty whose other side closed reads as EIO: that is its end too."""
    def run():
        try:
            for raw in stream:
                on_line(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except (OSError, ValueError):   # EIO from a closed pty; ValueError: the file was closed here
            pass
        on_line(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread
