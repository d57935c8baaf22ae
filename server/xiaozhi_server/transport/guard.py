"""Admission control for one listening port: how many connections may be
open, and how long one may sit before it has said anything useful.

A connection is *pending* until it proves itself (HTTP: its request line
and headers have arrived; WebSocket: the device's hello), and again while
an HTTP keep-alive connection waits for its next request. Pending
connections cost the server a file descriptor each and nothing else, so an
attacker can open thousands of them cheaply (headers sent one byte a
minute). Three rules keep the port serving everyone else:

- a pending connection gets `pending_timeout_s` to prove itself, then it
  is closed;
- at most `max_pending` connections may be pending: a new one closes the
  oldest pending one (it has been slowest the longest), so a real client,
  whose request arrives right after it connects, still gets in;
- at most `max_open` connections in all: beyond that a new connection is
  refused (closed at once). max_open - max_pending is the reserve that
  flooding with pending connections cannot take from working ones.

Refusals, evictions and timeouts are logged through a LogThrottle: a few
lines and one summary per interval, whatever the rate. Keyed by the
asyncio transport, so the same guard serves aiohttp and websockets.
"""
import asyncio
import collections
import logging
import resource

from ..logthrottle import LogThrottle

log = logging.getLogger(__name__)

FD_RESERVE = 256        # descriptors kept for everything but client connections


def accept_burst(max_pending):
    """The listen backlog, which is also how many connections asyncio accepts
    in one go: at most half the pending cap, so a burst of new connections
    cannot evict one accepted in the same burst before its request is read."""
    return max(8, min(256, max_pending // 2))


def fit_to_fd_limit(limits, ports=("http", "ws")):
    """Scale the connection caps down if they do not fit the process's file
    descriptor limit (1024 on many systems), keeping FD_RESERVE spare."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = sum(int(limits["%s_max_connections" % p]) for p in ports)
    if soft == resource.RLIM_INFINITY or need + FD_RESERVE <= soft:
        return
    scale = max(soft - FD_RESERVE, 16 * len(ports)) / float(need)
    for p in ports:
        for key in ("%s_max_connections" % p, "%s_max_pending" % p):
            limits[key] = max(8, int(int(limits[key]) * scale))
    log.warning("file descriptor limit %d: connection caps lowered to HTTP %d, WebSocket %d "
                "(raise `ulimit -n` for more)", soft, limits["http_max_connections"], limits["ws_max_connections"])


class GuardStats:
    __slots__ = ("admitted", "refused", "evicted", "timed_out", "peak_open", "peak_pending")

    def __init__(self):
        for k in self.__slots__:
            setattr(self, k, 0)


class ConnectionGuard:
    def __init__(self, name, max_open, max_pending, pending_timeout_s, log_interval_s=10.0):
        if not 0 < max_pending <= max_open:
            raise ValueError("%s: need 0 < max_pending <= max_open (got %d, %d)" % (name, max_pending, max_open))
        self.name = name
        self.max_open = max_open
        self.max_pending = max_pending
        self.pending_timeout_s = pending_timeout_s
        self.stats = GuardStats()
        self._open = set()
        self._pending = collections.OrderedDict()    # transport -> deadline, oldest first
        self._throttle = LogThrottle(log, interval_s=log_interval_s, burst=3)
        self._sweeper = None
        self.changed = asyncio.Event()                # set at every admission change (tests wait on it)

    # ---- counts ----

    @property
    def open_count(self):
        return len(self._open)

    @property
    def pending_count(self):
        return len(self._pending)

    # ---- the connection's life ----

    def admit(self, transport):
        """A new connection: False if it must be refused (the caller closes it)."""
        if len(self._open) >= self.max_open:
            self.stats.refused += 1
            self._note("refused", "%s: %d connections open, new ones refused", self.name, len(self._open))
            self._changed()
            return False
        while len(self._pending) >= self.max_pending:
            old, _deadline = self._pending.popitem(last=False)
            self.stats.evicted += 1
            self._note("evicted", "%s: %d connections still waiting to send a request; the oldest closed",
                       self.name, self.max_pending)
            self._drop(old)
        self._open.add(transport)
        self.stats.admitted += 1
        self.stats.peak_open = max(self.stats.peak_open, len(self._open))
        self.idle(transport)
        return True

    def busy(self, transport):
        """The connection proved itself: it is no longer pending."""
        if self._pending.pop(transport, None) is not None:
            self._changed()

    def idle(self, transport):
        """Pending (again): waiting for its request. Its clock starts now."""
        if transport not in self._open:
            return
        self._pending.pop(transport, None)
        self._pending[transport] = asyncio.get_running_loop().time() + self.pending_timeout_s
        self.stats.peak_pending = max(self.stats.peak_pending, len(self._pending))
        self._ensure_sweeper()
        self._changed()

    def closed(self, transport):
        self._pending.pop(transport, None)
        if transport in self._open:
            self._open.discard(transport)
            self._changed()

    async def until(self, predicate):
        """Wait until predicate(self) holds (re-checked at every admission change)."""
        while True:
            changed = self.changed
            if predicate(self):
                return
            await changed.wait()

    # ---- timeouts ----

    def _ensure_sweeper(self):
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    async def _sweep(self):
        """Close pending connections past their deadline (oldest are first)."""
        loop = asyncio.get_running_loop()
        tick = min(1.0, max(self.pending_timeout_s / 4, 0.05))
        while self._pending:
            now = loop.time()
            while self._pending:
                transport, deadline = next(iter(self._pending.items()))
                if deadline > now:
                    break
                del self._pending[transport]
                self.stats.timed_out += 1
                self._note("timed_out", "%s: a connection sent no complete request within %g s: closed",
                           self.name, self.pending_timeout_s)
                self._drop(transport)
            self._throttle.flush()
            await asyncio.sleep(tick)

    def stop(self):
        if self._sweeper is not None:
            self._sweeper.cancel()
        self._throttle.flush(force=True)

    # ---- helpers ----

    def _drop(self, transport):
        """Close a connection we gave up on. It stops counting now, not when
        its close callback runs: under a connect flood those callbacks queue
        up, and zombies counted against the cap would lock real clients out."""
        self._open.discard(transport)
        transport.abort()

    def _note(self, kind, msg, *args):
        self._throttle.log(logging.WARNING, "%s %s" % (self.name, kind), msg, *args)

    def _changed(self):
        self.changed.set()
        self.changed = asyncio.Event()


class GuardedProtocol(asyncio.Protocol):
    """An asyncio protocol that asks the guard before handing the connection
    to the real one (aiohttp's request handler), and tells it when it ends."""

    def __init__(self, inner, guard):
        self.inner = inner
        self.guard = guard
        self.transport = None
        self.admitted = False

    def connection_made(self, transport):
        self.transport = transport
        if not self.guard.admit(transport):
            transport.abort()
            return
        self.admitted = True
        self.inner.connection_made(transport)

    def data_received(self, data):
        if self.admitted:
            self.inner.data_received(data)

    def eof_received(self):
        return self.inner.eof_received() if self.admitted else None

    def pause_writing(self):
        if self.admitted:
            self.inner.pause_writing()

    def resume_writing(self):
        if self.admitted:
            self.inner.resume_writing()

    def connection_lost(self, exc):
        self.guard.closed(self.transport)
        if self.admitted:
            self.admitted = False
            self.inner.connection_lost(exc)
