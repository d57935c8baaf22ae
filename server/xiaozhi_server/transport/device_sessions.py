"""One live session per device: the newest wins, the older one is told.

A board that reboots or loses its network opens a new connection while the
server may still hold its old one (a half-open TCP connection lives until
the 30 s ping timeout), and two boards with one Device-Id would talk over
each other's session. So when a device's hello arrives and the device
already has a session, that older session gets a `goodbye` (reason
REPLACED) and is closed with 1000 and the same reason; the newer one goes
on. With device tokens an outsider cannot claim another device's id (its
token is bound to the id); a shared token or no auth (loopback) trusts the
Device-Id, as stock servers do.

    sessions = DeviceSessions()
    sessions.claim(device_id, session)      # after the hello; ends an older one
    sessions.release(device_id, session_id) # the primary says a newer one is on another worker
    sessions.gone(device_id, session)       # the session ended

With worker processes a device's two connections may land on two workers:
each worker's DeviceSessions also calls `on_claim(device_id, session_id)`,
which the worker sends to the primary; the primary tells the worker holding
the older session to release it (shard/pool.py).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

log = logging.getLogger(__name__)

REPLACED = "replaced by a newer connection of this device"


class DeviceSessions:
    def __init__(self) -> None:
        self._live: dict[str, Any] = {}        # device_id -> its newest Session
        self.on_claim: Callable[[str, str], None] | None = None
        self.replaced = 0
        self._tasks: set[asyncio.Task] = set()

    def claim(self, device_id: str, session: Any) -> None:
        old = self._live.get(device_id)
        self._live[device_id] = session
        if old is not None and old is not session:
            self._end(device_id, old)
        if self.on_claim is not None:
            self.on_claim(device_id, session.id)

    def release(self, device_id: str, session_id: str) -> None:
        old = self._live.get(device_id)
        if old is not None and old.id == session_id:
            del self._live[device_id]
            self._end(device_id, old)

    def gone(self, device_id: str, session: Any) -> None:
        if self._live.get(device_id) is session:
            del self._live[device_id]

    def _end(self, device_id, old):
        if old.closed:
            return
        self.replaced += 1
        log.info("[%s] a newer connection of this device took over: session %s from %s closed",
                 device_id, old.id, old.peer)
        t = asyncio.get_running_loop().create_task(old.close(REPLACED))
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
