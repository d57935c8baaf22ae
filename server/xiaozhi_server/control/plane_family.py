"""The control plane's part for a family's console (mixed into
plane.ControlPlane): the devices it knows, a device's name, forgetting a
device, the lessons on its card, its limits and its usage.

    await plane.list_devices()                  # [{device_id, name, online, app, task, ...}]
    await plane.rename_device("dev1", {"name": "Mia's bear"})
    await plane.forget_device("dev1")           # every row, credentials revoked
    await plane.lessons("dev1")                 # self.mp3.get_list over its voice session
    await plane.get_limits("dev1"); await plane.put_limits("dev1", body)
    await plane.usage("dev1", days=7)

A device is online when it has a voice session (WebSocket) on this server:
that is what can answer a tool call now. `session_of(device_id)` finds it;
the server sets it (a server whose sessions live in worker processes
cannot reach them from here: lessons() answers 503 and says so).
"""
from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..runtime.lessons import lesson_names
from . import checks
from .errors import BadRequest, ControlError, NotFound
from .family import MAX_USAGE_DAYS, check_name

if TYPE_CHECKING:
    from .devices import Devices
    from .family import Family
    from .store import Store

log = logging.getLogger(__name__)

LIST_TOOL = "self.mp3.get_list"
LIST_TIMEOUT_S = 5.0


class DeviceOffline(ControlError):
    status = 503
    code = "device_offline"


class FamilyPlane:
    # The plane's own (plane.py sets them).
    store: Store
    devices: Devices | None
    family: Family
    forgetters: list[Callable[[str], Awaitable[Any]]]

    session_of: Callable[[str], Any] = staticmethod(lambda device_id: None)
    sessions_here = True        # False when sessions live in worker processes

    async def _known(self, device_id):
        """NotFound unless the store knows the device."""
        checks.device_id(device_id)
        if not await self.store.device_known(device_id):
            raise NotFound("no device %s here (GET /api/devices lists them)" % device_id)

    def _row(self, d):
        report = json.loads(d["state"]) if d.get("state") else {}
        session = self.session_of(d["device_id"])
        runtime = getattr(session, "runtime", None) if session is not None else None
        app, task = report.get("active_app_id"), report.get("active_task_id")
        if runtime is not None and runtime.task is not None:
            app, task = runtime.task.app_id, runtime.task.id
        seen = [t for t in (d.get("received_at"), time.time() if session is not None else None) if t]
        return {"device_id": d["device_id"], "name": d.get("name"), "online": session is not None,
                "app": app, "task": task, "state": report.get("state"),
                "battery": _int_or_none(report.get("battery")), "volume": _int_or_none(report.get("volume")),
                "last_seen": int(max(seen)) if seen else None}

    async def list_devices(self) -> list[dict]:
        return [self._row(d) for d in await self.store.known_devices()]

    async def rename_device(self, device_id: str, body: object) -> dict:
        await self._known(device_id)
        await self.store.put_settings(device_id, name=check_name(body))
        return next(self._row(d) for d in await self.store.known_devices() if d["device_id"] == device_id)

    async def forget_device(self, device_id: str) -> None:
        """Every row the store keeps of the device goes, and the broker's files
        are written again without it: its MQTT login stops working. Its
        WebSocket token is derived from the server secret, so a session it
        opens again still needs a parent to provision or approve it anew
        (docs/security.md)."""
        await self._known(device_id)
        await self.store.forget_device(device_id)
        for forget in self.forgetters:
            await forget(device_id)
        if self.devices is not None:
            await self.devices.revoke(device_id)
        session = self.session_of(device_id)
        if session is not None:
            await session.close("device forgotten")
        log.warning("device %s forgotten: its records deleted, its credentials revoked", device_id)

    async def lessons(self, device_id: str) -> list:
        """The card's lessons, as the device lists them (self.mp3.get_list)."""
        await self._known(device_id)
        session = self.session_of(device_id)
        if session is None:
            where = "" if self.sessions_here else " (sessions live in worker processes, out of this API's reach)"
            raise DeviceOffline("device %s has no voice connection to this server%s: wake it and try again"
                                % (device_id, where))
        if not session.mcp.has(LIST_TOOL):
            raise DeviceOffline("device %s does not offer %s (no SD card player)" % (device_id, LIST_TOOL))
        text, is_error = await session.mcp.call(LIST_TOOL, {}, timeout=LIST_TIMEOUT_S)
        if is_error:
            raise DeviceOffline("device %s could not list its card: %s" % (device_id, text[:200]))
        try:
            files = json.loads(text).get("files") or []
        except (ValueError, AttributeError):
            files = []
        names = set(lesson_names(text))
        return [f if isinstance(f, dict) else {"name": f} for f in files
                if (f.get("name") if isinstance(f, dict) else f) in names]

    # ---- limits and usage ----

    async def get_limits(self, device_id: str) -> dict:
        await self._known(device_id)
        return await self.family.limits(device_id)

    async def put_limits(self, device_id: str, body: object) -> dict:
        await self._known(device_id)
        return await self.family.put_limits(device_id, body)

    async def usage(self, device_id: str, days: str | None) -> dict:
        await self._known(device_id)
        try:
            n = int(days) if days is not None else 7
        except ValueError:
            n = 0
        if not 1 <= n <= MAX_USAGE_DAYS:
            raise BadRequest("days must be a whole number from 1 to %d" % MAX_USAGE_DAYS)
        return await self.family.usage(device_id, n)

    async def count_lesson_report(self, device_id: str, msg: dict) -> None:
        """A board's `player_done` report: the lesson it named played all its
        passes. The report has no pass count: the passes are the `repeat` the
        last request or schedule naming that lesson asked for (1 by default)."""
        name = (msg.get("player") or {}).get("name")
        if msg.get("event") != "player_done" or not isinstance(name, str) or not name:
            return
        # The lesson is over: a conversation kept of it must not take it up again
        # (every node reads the report; ending it twice changes nothing).
        await self.store.end_kept_task(device_id, name)
        passes = 1
        for req in await self.store.recent_requests(device_id, 20):
            params = (req["payload"].get("params") or (req["payload"].get("pending_task") or {}).get("params")
                      or {})
            if params.get("name") == name:
                passes = params.get("repeat") or 1
                break
        # Every node reads the report: its time and lesson make it one count.
        key = "%s/%s" % (msg["timestamp"], name) if msg.get("timestamp") else None
        await self.family.count_lesson(device_id, name, passes, key)


def _int_or_none(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None
