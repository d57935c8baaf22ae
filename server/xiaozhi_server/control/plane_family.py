"""The control plane's part for a family's console (mixed into
plane.ControlPlane): the devices it knows, a device's name, forgetting a
device, the lessons on its card, its limits and its usage.

    await plane.list_devices()                  # [{device_id, name, online, online_elsewhere, control, greyed, ...}]
    await plane.saw_device("dev1", "ota", "1.6.0")   # an OTA check: listed from now on
    await plane.rename_device("dev1", {"name": "Mia's bear"})
    await plane.forget_device("dev1")           # every row, credentials revoked
    await plane.lessons("dev1")                 # self.mp3.get_list over its voice session
    await plane.get_limits("dev1"); await plane.put_limits("dev1", body)
    await plane.usage("dev1", days=7)

A device is online when it has a voice session (WebSocket) on this node:
that is what can answer a tool call now. `session_of(device_id)` finds it,
in this process or in whichever worker process holds it, as a view
(session/view.py: app, task, has_tool, call_tool, close); the server sets it.
"""
from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..runtime.lessons import lesson_names
from . import checks
from ..errors import BadRequest, ControlError, NotFound
from .family import MAX_USAGE_DAYS, check_name
from ..store.devices import MAX_SEEN

if TYPE_CHECKING:
    from .devices import Devices
    from .family import Family
    from ..store.store import Store

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
    node_id: str

    session_of: Callable[[str], Any] = staticmethod(lambda device_id: None)

    async def _known(self, device_id):
        """NotFound unless the store knows the device."""
        checks.device_id(device_id)
        if not await self.store.family.device_known(device_id):
            raise NotFound("no device %s here (GET /api/devices lists them)" % device_id)

    def _row(self, d):
        report = json.loads(d["state"]) if d.get("state") else {}
        session = self.session_of(d["device_id"])
        app, task = report.get("active_app_id"), report.get("active_task_id")
        if session is not None and session.task is not None:
            app, task = session.app, session.task
        elsewhere = d.get("held_by") if session is None and d.get("held_by") != self.node_id else None
        seen = [t for t in (d.get("received_at"), d.get("seen_at"), time.time() if session is not None else None) if t]
        # What the parent can do with it: a device that reports over MQTT
        # takes lessons, schedules and stop; one that only talks (a stock
        # device on OTA + WebSocket, which ignores the login it is handed)
        # does not. `greyed` says, by control, why the console greys it out
        # (codes the console words): no login at all, or one never used.
        control = d.get("state") is not None
        greyed = {}
        if not control:
            greyed["start"] = greyed["schedules"] = "never_reported" if d.get("login") else "voice_only"
        if session is None:
            greyed["lessons"] = "online_elsewhere" if elsewhere else "offline"
        elif not session.has_tool(LIST_TOOL):
            greyed["lessons"] = "no_card"
        return {"device_id": d["device_id"], "name": d.get("name"), "online": session is not None,
                "online_elsewhere": elsewhere, "control": "mqtt" if control else "voice_only",
                "greyed": greyed, "via": d.get("via"), "firmware": d.get("firmware"),
                "timezone": d.get("timezone") or self.family.default_timezone,
                "app": app, "task": task, "state": report.get("state"),
                "battery": _int_or_none(report.get("battery")), "volume": _int_or_none(report.get("volume")),
                "last_seen": int(max(seen)) if seen else None}

    async def saw_device(self, device_id: str, via: str, firmware: str | None = None) -> None:
        """An OTA check (or hello) from this device: it is listed from now on.
        An id that could not be a device's (checks.device_id) is not kept."""
        try:
            checks.device_id(device_id)
        except BadRequest:
            return
        if not await self.store.devices.saw_device(device_id, via, firmware[:64] if firmware else None):
            log.warning("device %s not listed: %d devices seen already", device_id, MAX_SEEN)

    async def list_devices(self) -> list[dict]:
        return [self._row(d) for d in await self.store.family.known_devices()]

    async def rename_device(self, device_id: str, body: object) -> dict:
        await self._known(device_id)
        await self.store.family.put_settings(device_id, name=check_name(body))
        return next(self._row(d) for d in await self.store.family.known_devices() if d["device_id"] == device_id)

    async def forget_device(self, device_id: str) -> None:
        """Every row the store keeps of the device goes, and the broker's files
        are written again without it: its MQTT login stops working. Its
        WebSocket token is derived from the server secret, so a session it
        opens again still needs a parent to provision or approve it anew
        (docs/security.md)."""
        await self._known(device_id)
        await self.store.family.forget_device(device_id)
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
            known = await self.store.family.known_devices()
            held = next((d.get("held_by") for d in known if d["device_id"] == device_id), None)
            if held and held != self.node_id:
                raise DeviceOffline("device %s is online on node %s: its card is read there (that node's console)"
                                    % (device_id, held))
            raise DeviceOffline("device %s has no voice connection to this server: wake it and try again"
                                % device_id)
        if not session.has_tool(LIST_TOOL):
            raise DeviceOffline("device %s does not offer %s (no SD card player)" % (device_id, LIST_TOOL))
        text, is_error = await session.call_tool(LIST_TOOL, {}, timeout=LIST_TIMEOUT_S)
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
        await self.store.conversations.end_kept_task(device_id, name)
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
