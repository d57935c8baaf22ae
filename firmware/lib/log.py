# Tiny leveled logger: MicroPython has no `logging`.
#
# Lines look like ESP-IDF's so one grep works on the board's UART and on the
# simulator's console:  "I (12345) ws: connected"  (level, ms since boot, tag).
#
#   import log
#   _log = log.get("ws")
#   _log.info("connected to %s", host)
#
# Formatting happens only when the level is enabled, so a disabled debug line
# costs one comparison and no allocation.
import sys
import time

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

ERROR = const(1)
WARN = const(2)
INFO = const(3)
DEBUG = const(4)

_LETTER = "?EWID"
_level = [INFO]
_out = [None]  # None: sys.stdout; else any object with write(str)
_tags = {}

if hasattr(time, "ticks_ms"):
    _T0 = time.ticks_ms()

    def _ms():
        return time.ticks_diff(time.ticks_ms(), _T0)
else:
    _T0 = time.monotonic()

    def _ms():
        return int((time.monotonic() - _T0) * 1000)


def set_level(level):
    _level[0] = level


def set_output(stream):
    """Send log lines to `stream` (an object with write(str)); None = stdout."""
    _out[0] = stream


def emit(level, tag, msg, args):
    if level > _level[0]:
        return
    try:
        if args:
            try:
                msg = msg % args
            except (TypeError, ValueError):
                msg = "%s %r" % (msg, args)
        line = "%s (%d) %s: %s\n" % (_LETTER[level], _ms(), tag, msg)
        out = _out[0] or sys.stdout
        out.write(line)
    except MemoryError:
        pass    # a heap too short for the line loses it: logging never fails its caller


class Logger:
    def __init__(self, tag):
        self.tag = tag

    def error(self, msg, *args):
        emit(ERROR, self.tag, msg, args)

    def warn(self, msg, *args):
        emit(WARN, self.tag, msg, args)

    def info(self, msg, *args):
        emit(INFO, self.tag, msg, args)

    def debug(self, msg, *args):
        emit(DEBUG, self.tag, msg, args)

    def enabled(self, level):
        return level <= _level[0]


def get(tag):
    """The logger for `tag` (one instance per tag)."""
    lg = _tags.get(tag)
    if lg is None:
        lg = _tags[tag] = Logger(tag)
    return lg
