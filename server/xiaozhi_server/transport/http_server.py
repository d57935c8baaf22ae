"""HTTP on port 8003: the OTA/activation endpoint devices call at boot.

POST (or GET) /xiaozhi/ota/ answers with the server time, the firmware the
device already runs (no upgrade is offered), and the WebSocket URL and
token. No `mqtt` key is sent: in stock firmware that selects the MQTT+UDP
audio transport, and this server speaks WebSocket. The control-plane
broker (parents' app) is announced under `control_mqtt`.
/xiaozhi/ota/activate answers 200: devices here need no activation code.
Other layers (the control API) add their routes to `app`.
"""
import json
import logging
import time

from aiohttp import web

from .. import protocol as proto
from . import auth

log = logging.getLogger(__name__)


class HttpServer:
    def __init__(self, services, ws_url_for, broker_url=None):
        self.services = services
        cfg = services.config["server"]
        self.host = cfg["host"]
        self.port = cfg["http_port"]
        self._ws_url_for = ws_url_for
        self.broker_url = broker_url
        self.app = web.Application(client_max_size=64 * 1024)
        self.app.router.add_route("*", "/xiaozhi/ota/", self.ota)
        self.app.router.add_route("*", "/xiaozhi/ota", self.ota)
        self.app.router.add_post("/xiaozhi/ota/activate", self.activate)
        self.app.router.add_get("/health", self.health)
        self._runner = None

    @property
    def ota_url(self):
        return "http://%s:%d/xiaozhi/ota/" % (self.host, self.port)

    async def ota(self, request):
        ident = auth.identify(str(request.rel_url), request.headers)
        info = {}
        if request.can_read_body:
            try:
                info = json.loads(await request.text() or "{}")
            except ValueError:
                return web.json_response({"error": "the body must be JSON system info"}, status=400)
            if not isinstance(info, dict):
                return web.json_response({"error": "the body must be a JSON object"}, status=400)
        if self.services.config["auth"].get("allowed_devices") and \
                ident.device_id not in self.services.config["auth"]["allowed_devices"]:
            log.warning("OTA refused for device %s", ident.device_id)
            return web.json_response({"error": "device not allowed"}, status=403)
        version = ((info.get("application") or {}).get("version")
                   or (request.headers.get("User-Agent", "").partition("/")[2]) or "0.0.0")
        tokens = self.services.config["auth"].get("tokens") or []
        offset = -time.timezone // 60 if not time.daylight else -time.altzone // 60
        host = self.services.config["server"].get("public_host") or request.host.split(":")[0]
        body = proto.ota_response(
            {"timestamp": int(time.time() * 1000), "timezone_offset": offset},
            {"version": version, "url": ""},
            {"url": self._ws_url_for(host), "token": tokens[0] if tokens else ""})
        if self.broker_url:
            body["control_mqtt"] = {"url": self.broker_url}
        err = proto.validate("ota.response", body)
        if err:  # our bug: say so rather than send a broken answer
            log.error("OTA answer does not fit the schema: %s", err)
            return web.json_response({"error": "server error"}, status=500)
        log.info("OTA check from %s (firmware %s)", ident.device_id, version)
        return web.json_response(body)

    async def activate(self, request):
        return web.json_response({"status": "activated"})

    async def health(self, request):
        return web.json_response({"status": "ok", "sessions": len(self.services.sessions)})

    async def start(self):
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0:
            self.port = site._server.sockets[0].getsockname()[1]
        return self

    async def stop(self):
        if self._runner is not None:
            await self._runner.cleanup()
