"""Rate-limited logging: a few lines per kind of event per interval, then
one summary line, instead of one line per event.

A flood (thousands of slow connections, a device sending aborts as fast as
it can) must not fill the disk: the first `burst` events of one kind in an
interval are logged as they come, the rest are only counted, and when the
interval ends one line says how many were left out.

    drops = LogThrottle(log, interval_s=10, burst=3)
    drops.log(logging.INFO, "text frames over the limit", "[%s] text frame dropped", peer)

`ThrottleFilter` does the same for loggers whose call sites are not ours
(asyncio, aiohttp, websockets) and for per-device lines: records are keyed
by logger, message template and, optionally, the first argument (the
device id in our "[%s] ..." lines), so one device cannot drown the others.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, Hashable, Iterable

MAX_KEYS = 4096     # windows kept at once; older closed ones are summarised early


class _Window:
    __slots__ = ("start", "count", "level", "label", "logger")

    def __init__(self, start, level, label, logger):
        self.start = start
        self.count = 0
        self.level = level
        self.label = label
        self.logger = logger


class LogThrottle:
    def __init__(self, logger: logging.Logger | None = None, interval_s: float = 10.0,
                 burst: int = 3, clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger or logging.getLogger("xiaozhi_server")
        self.interval_s = interval_s
        self.burst = burst
        self.clock = clock
        self._windows: dict[Hashable, _Window] = {}
        self._timer: tuple[asyncio.AbstractEventLoop, asyncio.TimerHandle] | None = None

    def allow(self, key: Hashable, level: int = logging.INFO, label: str | Callable[[], str] | None = None,
              logger: logging.Logger | _SummaryLogger | None = None) -> bool:
        """Count one event of this kind; True if it may be logged now. label
        names the kind in the summary (a callable is called only when needed)."""
        now = self.clock()
        w = self._windows.get(key)
        if w is not None and now - w.start >= self.interval_s:
            self._close(key, w)
            w = None
        if w is None:
            if len(self._windows) >= MAX_KEYS:
                self.flush(now, force=True)
            if callable(label):
                label = label()
            w = self._windows[key] = _Window(now, level, label or str(key), logger or self.logger)
        w.count += 1
        if w.count <= self.burst:
            return True
        if w.count == self.burst + 1:
            self._arm(w.start + self.interval_s - now)
        return False

    def log(self, level: int, key: Hashable, msg: str, *args: Any) -> bool:
        """Log msg % args unless this kind of event has used its lines; True if logged."""
        if self.allow(key, level):
            self.logger.log(level, msg, *args)
            return True
        return False

    def flush(self, now: float | None = None, force: bool = False) -> None:
        """Summarise every window that has ended (every window with force)."""
        now = self.clock() if now is None else now
        for key, w in list(self._windows.items()):
            if force or now - w.start >= self.interval_s:
                self._close(key, w)

    def _close(self, key, w):
        del self._windows[key]
        left_out = w.count - self.burst
        if left_out > 0:
            w.logger.log(w.level, "%s: %d more like it within %g s, not logged one by one",
                         w.label, left_out, self.interval_s)

    def _arm(self, delay):
        """Summarise when the window ends even if no later event comes (when a
        loop runs; a filter outlives the loops of tests, so a timer left on a
        closed loop is replaced)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._timer is not None and self._timer[0] is loop and not loop.is_closed():
            return

        def fire():
            self._timer = None
            self.flush()
            if any(w.count > self.burst for w in self._windows.values()):
                self._arm(self.interval_s / 2)
        self._timer = (loop, loop.call_later(max(delay, 0.01), fire))


class ThrottleFilter(logging.Filter):
    """A logging filter: at most `burst` records of one template per interval."""

    def __init__(self, interval_s=10.0, burst=10, by_first_arg=False):
        super().__init__()
        self.throttle = LogThrottle(interval_s=interval_s, burst=burst)
        self.by_first_arg = by_first_arg

    def filter(self, record):
        if getattr(record, "_throttle_summary", False):
            return True
        key = (record.name, str(record.msg))
        if self.by_first_arg and isinstance(record.args, tuple) and record.args:
            key += (str(record.args[0]),)
        logger = _SummaryLogger(logging.getLogger(record.name))
        return self.throttle.allow(key, record.levelno, lambda: record.getMessage()[:120], logger)


class _SummaryLogger:
    """Logs a summary through the throttled logger, marked so the filter lets it pass."""

    def __init__(self, logger):
        self.logger = logger

    def log(self, level, msg, *args):
        self.logger.log(level, msg, *args, extra={"_throttle_summary": True})


def throttle_loggers(names: Iterable[str], interval_s: float = 10.0, burst: int = 10,
                     by_first_arg: bool = False) -> None:
    """Attach one ThrottleFilter to each named logger (once, however often
    called); a later call sets the interval and burst of the one attached."""
    for name in names:
        logger = logging.getLogger(name)
        mine = [f for f in logger.filters if isinstance(f, ThrottleFilter)]
        if mine:
            mine[0].throttle.interval_s, mine[0].throttle.burst = interval_s, burst
        else:
            logger.addFilter(ThrottleFilter(interval_s, burst, by_first_arg))


# Loggers one client can make write a line per message or per connection:
# each template is summarised past a few lines per interval, per device for
# ours (their lines start with "[device]"), so one device cannot drown the rest.
# The HTTP endpoints anyone may call are summarised per template, not per
# device: a caller can send a new Device-Id with every request.
DEVICE_LOGGERS = ("xiaozhi_server.session.session", "xiaozhi_server.session.floor",
                  "xiaozhi_server.session.hearing", "xiaozhi_server.session.hello",
                  "xiaozhi_server.session.requests", "xiaozhi_server.pipeline.listener",
                  "xiaozhi_server.runtime.runtime", "xiaozhi_server.mcp.device_client")
LIBRARY_LOGGERS = ("asyncio", "aiohttp.server", "aiohttp.web", "aiohttp.access", "websockets.server",
                   "xiaozhi_server.transport.websockets", "xiaozhi_server.transport.http_server")
DEVICE_LOG_BURST = 20


def throttle_server_logs(interval_s: float) -> None:
    """The server's loggers that a client can make write, summarised."""
    throttle_loggers(DEVICE_LOGGERS, interval_s, DEVICE_LOG_BURST, by_first_arg=True)
    throttle_loggers(LIBRARY_LOGGERS, interval_s, DEVICE_LOG_BURST)
