"""HTTP on port 8003: the OTA/activation endpoint devices call at boot.

POST (or GET) /xiaozhi/ota/ answers with the server time, the firmware the
device already runs (no upgrade is offered), and the WebSocket URL. No
`mqtt` key is sent: in stock firmware that selects the MQTT+UDP audio
transport, and this server speaks WebSocket. The control-plane broker
(parents' app) is announced under `control_mqtt`.

With several nodes sharing a control store (docs/deploy.md), the URL is
the device's node: the one it was sent to while that node lives and
serves, else the least loaded live one (fleet/nodes.py).

Nothing secret goes to any caller (control/devices.py has the policy):
with device tokens configured, a device gets its own token and broker
login only once activated (an approved code binds its Device-Id and
Client-Id) or when it presents its token; anyone else gets an activation
code. /xiaozhi/ota/activate answers 202 while the code waits for a
parent, 200 once approved (and always 200 with no tokens configured).
Other layers (the control API) add their routes to `app`.

/console/ is the parents' console (files in ../console/): static, served
without a token (the page holds no data; its API calls need the login),
with a policy that lets it load nothing from another host and be framed
by no other page. On a server bound to loopback the console answers only
requests that name loopback in Host (and Origin): a page under another
name that resolves to 127.0.0.1 (DNS rebinding) gets 403 (local_origin.py).

Every connection passes the edge first (http_edge.py: header and body
timeouts, body limit, connection cap); the device endpoints answer a
browser's CORS preflight. The firmware version comes from the system info
or a `<board>/<version>` User-Agent, never from a browser's User-Agent.
"""
from __future__ import annotations

import asyncio
import datetime
import logging
import pathlib
import re
import time
import zoneinfo
from typing import TYPE_CHECKING, Callable

from aiohttp import web

from .. import protocol as proto
from ..config import is_loopback
from ..errors import StoreUnavailable
from ..local_origin import loopback_named
from ..logthrottle import LogThrottle
from . import auth, http_edge, tls

if TYPE_CHECKING:
    from ..services import Services

log = logging.getLogger(__name__)

CONSOLE_DIR = pathlib.Path(__file__).resolve().parent.parent / "console"
CONSOLE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                               "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
MAX_CONSOLE_PATH = 256
# What the console ships, by suffix: anything else is not served.
CONSOLE_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".json": "application/json; charset=utf-8",
                 ".css": "text/css; charset=utf-8", ".png": "image/png", ".svg": "image/svg+xml"}

# esp-box-3/1.5.6, host/0.1.0, bread-compact-wifi/1.6.0-beta: one token, a dotted version.
_DEVICE_AGENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*/v?([0-9]+(?:\.[0-9]+){1,3}(?:[-+][0-9A-Za-z.-]+)?)$")


# User-Agents of browsers and HTTP tools, shaped like a board's but naming no firmware.
HTTP_TOOLS = ("mozilla", "curl", "wget", "python-requests", "python-urllib", "python-httpx", "aiohttp",
              "httpie", "go-http-client", "okhttp", "postmanruntime", "insomnia", "java", "node-fetch", "axios")


def agent_version(user_agent: str | None) -> str | None:
    """The firmware version in a device's `<board>/<version>` User-Agent, or None.
    A browser's ("Mozilla/5.0 (X11; Linux x86_64) ...") names no firmware."""
    ua = (user_agent or "").strip()
    m = _DEVICE_AGENT.match(ua)
    if m is None or ua.lower().split("/")[0] in HTTP_TOOLS:
        return None
    return m.group(1)


def firmware_version(info, user_agent):
    """The version the device runs: its system info's application.version,
    else its User-Agent's, else 0.0.0."""
    app = info.get("application")
    version = app.get("version") if isinstance(app, dict) else None
    if not isinstance(version, str) or not version.strip():
        version = agent_version(user_agent)
    return version or "0.0.0"


class HttpServer:
    def __init__(self, services: Services, ws_url_for: Callable[[str], str],
                 broker_url_for: Callable[[str], str] | None = None) -> None:
        self.services = services
        cfg = services.config["server"]
        self.host = cfg["host"]
        self.port = cfg["http_port"]
        self.ssl = tls.server_context(services.config)
        self._ws_url_for = ws_url_for
        self.broker_url_for = broker_url_for    # fn(host) -> the broker's URL as a device there reaches it
        self.devices = None     # control.devices.Devices when the control plane runs
        self.fleet = None       # fleet.nodes.Node: which node a device is sent to
        self.workers = None     # shard.pool.WorkerPool when worker processes hold the sessions
        self.on_seen = None     # async fn(device_id, via, firmware): the control store lists every device seen
        self.limits = services.config["limits"]
        self.log_throttle = LogThrottle(log, interval_s=float(self.limits["log_interval_s"]))
        self.guard = http_edge.make_guard(self.limits)
        self.app = web.Application(client_max_size=int(self.limits["http_max_body"]), middlewares=[
            http_edge.edge_middleware(self.guard, self.limits, self.log_throttle),
            http_edge.cors_middleware(("/xiaozhi/ota", "/health"))])
        self.app.router.add_route("*", "/xiaozhi/ota/", self.ota)
        self.app.router.add_route("*", "/xiaozhi/ota", self.ota)
        self.app.router.add_post("/xiaozhi/ota/activate", self.activate)
        self.app.router.add_get("/health", self.health)
        self.app.router.add_get("/console", self.console_home)
        self.app.router.add_get("/console/", self.console_page)
        self.app.router.add_get("/console/{path:.+}", self.console_page)
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        return "%s://%s:%d" % ("https" if self.ssl else "http", self.host, self.port)

    @property
    def ota_url(self) -> str:
        return self.base_url + "/xiaozhi/ota/"

    async def ota(self, request):
        ident = auth.identify(str(request.rel_url), request.headers)
        info = {}
        if request.body_exists:     # read by the edge already (can_read_body is False then)
            try:
                info = proto.decode_json(await request.text() or "{}", int(self.limits["http_max_body"]))
            except proto.ProtoError as e:
                return web.json_response({"error": "the body must be a JSON object of system info: %s" % e},
                                         status=400)
        if self.services.config["auth"].get("allowed_devices") and \
                ident.device_id not in self.services.config["auth"]["allowed_devices"]:
            log.warning("OTA refused for device %s", ident.device_id)
            return web.json_response({"error": "device not allowed"}, status=403)
        version = firmware_version(info, request.headers.get("User-Agent"))
        if self.on_seen is not None and ident.device_id:
            try:
                await self.on_seen(ident.device_id, "ota", version)
            except StoreUnavailable as e:      # the check goes on: listing it waits for its next one
                self.log_throttle.log(logging.WARNING, "seen", "OTA check from %s not listed: %s",
                                      ident.device_id, e.message)
        kind, grant = "open", None
        if self.devices is not None:
            try:
                kind, grant = await self.devices.ota_grant(ident.device_id, ident.client_id, ident.token,
                                                           request.remote)
            except StoreUnavailable as e:
                log.warning("OTA check from %s: %s", ident.device_id, e.message)
                return web.json_response({"error": "the server cannot check this device now: try again"},
                                         status=503, headers={"Retry-After": "5"})
            if kind == "busy":   # a limit on waiting activation codes: stock firmware asks again later
                return web.json_response({"error": "%s: try again later" % grant}, status=429,
                                         headers={"Retry-After": "60"})
        elif [t for t in self.services.config["auth"].get("tokens") or [] if t]:
            kind = "activate"   # tokens, but no device registry to activate with: nothing to hand out
        offset = await self._zone_offset(ident.device_id)
        host = self.services.config["server"].get("public_host") or request.host.split(":")[0]
        control = None
        if kind == "granted":
            control = grant["mqtt"]
        elif self.broker_url_for is not None:
            control = {"url": self.broker_url_for(host)}
        # Nodes sharing a store: the device's node (sticky while it lives), else
        # the least loaded; this node when it is the one, or the store cannot say.
        other = await self.fleet.ws_url_for(ident.device_id) if self.fleet is not None else None
        websocket = {"url": other or self._ws_url_for(host)}
        # Always there, empty when this device gets none (no token asked for,
        # or not approved yet): stock clients (xiaozhi-sdk, py-xiaozhi) read
        # the key unconditionally, and stock firmware sends no Authorization
        # header for an empty one.
        websocket["token"] = grant["token"] if kind == "granted" else ""
        body = proto.ota_response(
            {"timestamp": int(time.time() * 1000), "timezone_offset": offset},
            {"version": version, "url": ""}, websocket,
            control_mqtt=control, activation=grant if kind == "activate" else None)
        err = proto.validate("ota.response", body)
        if err:  # our bug: say so rather than send a broken answer
            log.error("OTA answer does not fit the schema: %s", err)
            return web.json_response({"error": "server error"}, status=500)
        log.info("OTA check from %s (firmware %s)%s", ident.device_id, version,
                 {"granted": ": credentials handed over", "activate": ": not activated, nothing handed over"}
                 .get(kind, ""))
        return web.json_response(body)

    async def _zone_offset(self, device_id):
        """Minutes east of UTC, now, in the device's zone (its family's
        limits, else the default zone): the clock a child sees is theirs,
        not the server host's."""
        family = getattr(self.services, "family", None)
        name = None
        if family is not None:
            try:
                name = (await family.limits(device_id))["timezone"] if device_id else family.default_timezone
            except Exception:       # an unknown or unusable id, the store away: the default zone
                name = family.default_timezone
        if name is None:
            return -time.timezone // 60 if not time.daylight else -time.altzone // 60
        now = datetime.datetime.now(zoneinfo.ZoneInfo(name))
        return int(now.utcoffset().total_seconds() // 60)

    async def activate(self, request):
        """202 while the device's code waits for a parent, 200 once approved,
        404 when it never asked for one (ask the OTA endpoint first)."""
        ident = auth.identify(str(request.rel_url), request.headers)
        status = await self.devices.activation_state(ident.device_id, ident.client_id) \
            if self.devices is not None else 200
        if status == 200:
            return web.json_response({"status": "activated"})
        if status == 202:
            return web.json_response({"status": "waiting for a parent to approve the code"}, status=202)
        return web.json_response({"error": "no activation code for this device: ask the OTA endpoint first"},
                                 status=404)

    async def health(self, request):
        status = "draining" if self.fleet is not None and self.fleet.draining else "ok"
        if self.workers is None:
            body = {"status": status, "sessions": len(self.services.sessions)}
        else:
            per_worker = self.workers.sessions()
            body = {"status": status, "sessions": sum(per_worker), "workers": per_worker}
        if self.fleet is not None:
            body["node"] = self.fleet.id
        return web.json_response(body)

    async def console_home(self, request):
        raise web.HTTPFound("/console/")

    async def console_page(self, request):
        """A file of the console; its index for /console/ itself. Only
        files inside the console's folder, and no hidden ones."""
        if is_loopback(self.host) and not loopback_named(request.headers):
            return web.json_response({"error": "this server is on loopback: open the console as "
                                               "http://127.0.0.1 or http://localhost"}, status=403)
        rel = request.match_info.get("path") or "index.html"
        # The file system's own refusals (a NUL, a name over 255 bytes) would be 500s.
        if "\x00" in rel or len(rel) > MAX_CONSOLE_PATH or any(len(p.encode()) > 255 for p in rel.split("/")):
            return web.json_response({"error": "not a console file name"}, status=400)
        try:
            path = (CONSOLE_DIR / rel).resolve()
            found = CONSOLE_DIR in path.parents and path.suffix in CONSOLE_TYPES and path.is_file() \
                and not any(part.startswith(".") for part in path.relative_to(CONSOLE_DIR).parts)
        except (OSError, ValueError):
            found = False
        if not found:
            return web.json_response({"error": "no such console file: %s" % rel[:80]}, status=404)
        return web.FileResponse(path, headers=dict(CONSOLE_HEADERS, **{"Content-Type": CONSOLE_TYPES[path.suffix]}))

    async def start(self) -> HttpServer:
        # keepalive_timeout also closes a connection that sends no complete
        # request at all (aiohttp starts it at connect); the guard does the
        # same for its own count, and keeps the cap.
        self._runner = web.AppRunner(self.app, access_log=None,
                                     keepalive_timeout=float(self.limits["http_header_timeout_s"]))
        await self._runner.setup()
        self._listener = await http_edge.serve(self._runner, self.guard, self.host, self.port, self.ssl,
                                               float(self.limits["http_header_timeout_s"]))
        if self.port == 0:
            self.port = self._listener.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
        self.guard.stop()
        if self._runner is not None:
            await self._runner.cleanup()
