"""This server as one node of several sharing a store (docs/deploy.md).

    node = Node(store, node_id, ws_url, http_url, sessions=lambda: 3, held=lambda: {"dev1"})
    await node.start()                 # registered, heartbeat every heartbeat_s
    url = await node.ws_url_for(dev)   # another node's URL for this device, or None: this one
    await node.drain()                 # no device is sent here any more
    await node.stop()                  # gone from the registry at once

The heartbeat carries the node's load (its sessions) and brings back the
state stored for it, so `xiaozhi-server node drain NODE` on any node
reaches this one: `on_drain_asked` runs. A node whose row was forgotten
(it was cut off for long) registers again. When the store is away the
node goes on serving the devices it has, and OTA sends devices to it.
With each beat the node also writes which devices' voice sessions opened
or ended here since the last one (`held`), so every node's console says
where a device is online.
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from typing import TYPE_CHECKING, Callable

from ..logthrottle import LogThrottle
from ..errors import StoreUnavailable
from ..store.fleet import DRAINING, SERVING

if TYPE_CHECKING:
    from ..store.store import Store

log = logging.getLogger(__name__)


def new_node_id(public_host: str | None, ws_port: int) -> str:
    """Readable and never reused: a restarted node is a new node (its old
    claims must be taken over, not mistaken for its own)."""
    return "%s:%d-%s" % (public_host or socket.gethostname(), ws_port, uuid.uuid4().hex[:6])


class Node:
    def __init__(self, store: Store, node_id: str, ws_url: str | None, http_url: str | None,
                 sessions: Callable[[], int], heartbeat_s: float = 1.0,
                 on_drain_asked: Callable[[], None] | None = None,
                 held: Callable[[], set] | None = None) -> None:
        self.store = store
        self.id = node_id
        self.ws_url = ws_url
        self.http_url = http_url
        self.sessions = sessions
        self.heartbeat_s = heartbeat_s
        self.on_drain_asked = on_drain_asked
        self.held = held
        self._written: set = set()      # the held devices the store has from this node
        self.draining = False
        self.beats = 0
        self._task: asyncio.Task | None = None
        self._throttle = LogThrottle(log, interval_s=30.0)

    async def start(self) -> Node:
        await self.store.fleet.register_node(self.id, self.ws_url, self.http_url)
        log.info("node %s registered (devices are sent to %s; pid %d)", self.id,
                 self.ws_url or "nowhere else: no public host", os.getpid())
        self._task = asyncio.create_task(self._beat(), name="node-heartbeat")
        return self

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_s)
            try:
                state = await self.store.fleet.heartbeat(self.id, self.sessions())
                if state is None:
                    log.warning("node %s was forgotten by the store (cut off too long): registering again", self.id)
                    await self.store.fleet.register_node(self.id, self.ws_url, self.http_url,
                                                         DRAINING if self.draining else SERVING)
                elif state == DRAINING and not self.draining:
                    log.warning("node %s was asked to drain", self.id)
                    self.draining = True
                    if self.on_drain_asked is not None:
                        self.on_drain_asked()
                if self.held is not None:
                    now = set(self.held())
                    if now != self._written:
                        await self.store.devices.set_held(self.id, now - self._written, self._written - now)
                        self._written = now
                self.beats += 1
            except StoreUnavailable as e:
                self._throttle.log(logging.WARNING, "heartbeat", "node %s: no heartbeat: %s", self.id, e.message)
            except Exception:
                log.exception("node %s: heartbeat failed", self.id)

    async def ws_url_for(self, device_id: str | None) -> str | None:
        """The WebSocket URL of the node this device should use, when it is
        another node; None when it is this one (or the store cannot say)."""
        if not device_id:
            return None
        try:
            node = await self.store.fleet.route(device_id, None if self.draining else self.id)
        except StoreUnavailable as e:
            self._throttle.log(logging.WARNING, "routing", "OTA for %s answered with this node: %s",
                               device_id, e.message)
            return None
        if node is None or node["node_id"] == self.id:
            return None
        return node["ws_url"]

    async def drain(self) -> None:
        """No device is sent here from now on (sticky routes move at their next OTA)."""
        self.draining = True
        try:
            await self.store.fleet.set_node_state(self.id, DRAINING)
        except StoreUnavailable as e:
            log.warning("node %s could not say it drains: %s", self.id, e.message)

    async def stop(self) -> None:
        if self._task is not None:
            # gather, not `except CancelledError: pass`: that would also swallow a
            # cancellation of stop() itself.
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if not self.store.is_open:
            return
        try:
            await self.store.fleet.leave(self.id)
        except StoreUnavailable as e:
            log.warning("node %s left without telling the store (%s): it drops out after its TTL", self.id, e.message)
