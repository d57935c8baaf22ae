"""Per-connection message rate limits, applied before the session sees a frame.

Each WebSocket connection has two token buckets, one for text frames and
one for binary (audio) frames. A real device sends ~17 audio frames a
second (60 ms Opus), a burst of buffered frames after a wake word, and a
few text messages a second at most (listen, abort, MCP answers, paged tool
lists in a burst). A frame that finds its bucket empty is dropped, never
handed to the session, and counted; the first drops of each kind are
logged through the server's LogThrottle, the rest summarised. A connection
that keeps sending over its limit for `flood_close_s` (its bucket never
filling up again in between) is closed with 1008 and a reason saying so, so
one flooding connection costs the others only the work of reading its frames.
That work is bounded too: every DROP_BATCH frames dropped in a row, the
connection's reading pauses for DROP_PAUSE_S, so its socket backs up and
the flooder is slowed by TCP instead of by the server's CPU.

`LimitedConnection` stands in for the websockets connection in the Session:
recv(), async iteration, and everything else passed through unchanged.
"""
import asyncio
import logging
import time

from websockets.exceptions import ConnectionClosedOK

from ..tokenbucket import TokenBucket

log = logging.getLogger(__name__)

POLICY_VIOLATION = 1008
DROP_BATCH = 32
DROP_PAUSE_S = 0.005


class RateStats:
    """Totals over every connection of one server (bench and tests read them)."""

    __slots__ = ("passed_text", "passed_binary", "dropped_text", "dropped_binary", "flood_closed")

    def __init__(self):
        self.passed_text = self.passed_binary = 0
        self.dropped_text = self.dropped_binary = self.flood_closed = 0


class LimitedConnection:
    def __init__(self, conn, limits, stats, throttle, name, clock=time.monotonic):
        self._conn = conn
        self.limits = limits
        self.stats = stats
        self.throttle = throttle
        self.name = name
        self.clock = clock
        now = clock()
        self._text = TokenBucket(limits["ws_text_per_s"], limits["ws_text_burst"], now)
        self._binary = TokenBucket(limits["ws_binary_per_s"], limits["ws_binary_burst"], now)
        self.dropped = 0
        self._in_row = 0
        self.closing = False

    def __getattr__(self, name):
        return getattr(self._conn, name)

    async def recv(self):
        while True:
            message = await self._conn.recv()
            if self.closing:
                continue        # closed for flooding: what was still queued is dropped
            bucket = self._text if isinstance(message, str) else self._binary
            if self._admit(bucket):
                self._in_row = 0
                return message
            if self.clock() - bucket.over_since >= self.limits["ws_flood_close_s"]:
                await self._close_flood()
            self._in_row += 1
            if self._in_row % DROP_BATCH == 0:
                await asyncio.sleep(DROP_PAUSE_S)

    def __aiter__(self):
        return self._iterate()

    async def _iterate(self):
        try:
            while True:
                yield await self.recv()
        except ConnectionClosedOK:
            return

    def _admit(self, bucket):
        text = bucket is self._text
        if bucket.take(self.clock()):
            if text:
                self.stats.passed_text += 1
            else:
                self.stats.passed_binary += 1
            return True
        self.dropped += 1
        if text:
            self.stats.dropped_text += 1
        else:
            self.stats.dropped_binary += 1
        kind = "text" if text else "binary"
        rate = self.limits["ws_%s_per_s" % kind]
        self.throttle.log(logging.WARNING, "%s frames over the rate limit" % kind,
                          "[%s] %s frames over %g/s are dropped", self.name, kind, rate)
        return False

    async def _close_flood(self):
        self.closing = True
        self.stats.flood_closed += 1
        self.throttle.log(logging.WARNING, "connections closed for flooding",
                          "[%s] over the rate limit for %g s: closed", self.name, self.limits["ws_flood_close_s"])
        await self._conn.close(POLICY_VIOLATION, "too many messages: over the rate limit for %g s"
                               % self.limits["ws_flood_close_s"])
