"""Two boards with one device id (a copied config or state, a cloned MAC)
log in with the same credentials, so the broker gives them one session:
each connect throws the other board off, and the two take it from each
other without end. Neither board can tell; the server can, and says so in
the device's record (GET /api/devices/{id}, `duplicate`).

    watch = DuplicateWatch()
    watch.takeover(device_id)     # the broker logged a session takeover (broker.py)
    watch.connected(device_id)    # the board said it connected (its "online" report)
    watch.record(device_id)       # None, or what the parents see

Two signals, counted over the last WINDOW_S:
- session takeovers, from the log of the broker the server started: a
  board that reconnects before the broker noticed its old connection was
  lost takes its own session over once; TAKEOVERS in a window is a fight;
- connects, from the board's "online" report at every connect, for a
  broker whose log the server cannot read; a board on a flaky network
  reconnects too, so more of them are needed (CONNECTS).
The record stays until the device has been quiet for CLEAR_AFTER_S.
Kept in memory: it describes what is happening now.
"""
import collections
import logging
import time

log = logging.getLogger(__name__)

WINDOW_S = 120.0
TAKEOVERS = 3
CONNECTS = 6
CLEAR_AFTER_S = 600.0
MAX_DEVICES = 10000


class _Seen:
    __slots__ = ("takeovers", "connects", "flagged_at", "last_at", "peak_takeovers", "peak_connects")

    def __init__(self):
        self.takeovers = collections.deque()
        self.connects = collections.deque()
        self.flagged_at = None      # wall clock, when the fight was first seen
        self.last_at = 0.0          # monotonic, the last event
        self.peak_takeovers = self.peak_connects = 0


class DuplicateWatch:
    def __init__(self, clock=time.monotonic, wall=time.time):
        self.clock = clock
        self.wall = wall
        self._seen: dict[str, _Seen] = {}

    def takeover(self, device_id: str) -> None:
        self._note(device_id, "takeovers")

    def connected(self, device_id: str) -> None:
        self._note(device_id, "connects")

    def _note(self, device_id, what):
        now = self.clock()
        seen = self._seen.get(device_id)
        if seen is None:
            if len(self._seen) >= MAX_DEVICES:
                self._forget(now)
            seen = self._seen[device_id] = _Seen()
        seen.last_at = now
        events = getattr(seen, what)
        events.append(now)
        while events and now - events[0] > WINDOW_S:
            events.popleft()
        seen.peak_takeovers = max(seen.peak_takeovers, len(seen.takeovers))
        seen.peak_connects = max(seen.peak_connects, len(seen.connects))
        if seen.flagged_at is None and (len(seen.takeovers) >= TAKEOVERS or len(seen.connects) >= CONNECTS):
            seen.flagged_at = self.wall()
            log.warning("device %s: %d broker session takeovers and %d connects within %.0f s: two boards "
                        "seem to share this device id (a copied config or a cloned MAC)",
                        device_id, len(seen.takeovers), len(seen.connects), WINDOW_S)

    def _forget(self, now):
        self._seen = {d: s for d, s in self._seen.items() if now - s.last_at < CLEAR_AFTER_S}

    def record(self, device_id: str) -> dict | None:
        """What the device's record shows: None, or the fight as seen."""
        seen = self._seen.get(device_id)
        if seen is None or seen.flagged_at is None:
            return None
        quiet = self.clock() - seen.last_at
        if quiet >= CLEAR_AFTER_S:
            del self._seen[device_id]
            return None
        return {"suspected": True,
                "message": "two boards seem to use this device id: they take the broker session from each "
                           "other (give each board its own id and credentials)",
                "since": round(seen.flagged_at, 3),
                "last_seen_s_ago": round(quiet, 1),
                "takeovers": seen.peak_takeovers, "connects": seen.peak_connects, "window_s": WINDOW_S}
