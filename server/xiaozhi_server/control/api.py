"""The parents' HTTP API (JSON in and out), added to the server's aiohttp app.

    add_routes(app, plane, tokens=[...], token_required=True)

Every answer is JSON; an error is {"error": {"code", "message"}} with the
HTTP status of its ControlError (400 names the field, 404, 409, 503 when
the broker is away, 401 without a valid token). docs/api.md and
docs/openapi.yaml describe the routes; a test checks they list every one.
"""
import hmac
import json
import logging

from aiohttp import web

from .errors import BadRequest, ControlError, Unauthorized

log = logging.getLogger(__name__)

PREFIX = "/api/devices/{device_id}"
MAX_WAIT_S = 30.0
TASK_FIELDS = ("app_id", "task_id", "params")


def routes():
    """(method, path, handler name) of every route; the docs test reads this."""
    return (
        ("GET", PREFIX, "device"),
        ("POST", PREFIX + "/tasks", "start_task"),
        ("POST", PREFIX + "/schedules", "add_schedule"),
        ("GET", PREFIX + "/schedules", "list_schedules"),
        ("GET", PREFIX + "/schedules/{alarm_id}", "get_schedule"),
        ("DELETE", PREFIX + "/schedules/{alarm_id}", "delete_schedule"),
    )


def error_response(e):
    body = {"error": {"code": e.code, "message": e.message}}
    body.update(e.extra)
    return web.json_response(body, status=e.status, dumps=_dumps)


def _dumps(obj):
    return json.dumps(obj, ensure_ascii=False)


class ControlApi:
    def __init__(self, plane, tokens=(), token_required=False):
        self.plane = plane
        self.tokens = [t for t in tokens if t]
        self.token_required = token_required or bool(self.tokens)

    def _authorize(self, request):
        if not self.token_required:
            return
        if not self.tokens:
            raise Unauthorized("this server is not on loopback: set control.api_token to use the API")
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not any(hmac.compare_digest(given.strip(), t) for t in self.tokens):
            raise Unauthorized("send Authorization: Bearer <control.api_token>")

    def wrap(self, handler):
        async def run(request):
            try:
                self._authorize(request)
                return await handler(request)
            except ControlError as e:
                if e.status >= 500:
                    log.warning("%s %s: %s", request.method, request.path, e.message)
                return error_response(e)
        return run

    # ---- reading the request ----

    @staticmethod
    async def _body(request):
        try:
            body = json.loads(await request.text() or "null")
        except ValueError as e:
            raise BadRequest("the body must be JSON (%s)" % e)
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        return body

    @staticmethod
    def _wait(request):
        raw = request.query.get("wait")
        if raw is None:
            return 0.0
        try:
            w = float(raw)
        except ValueError:
            w = -1
        if not 0 <= w <= MAX_WAIT_S:
            raise BadRequest("wait must be a number of seconds from 0 to %d" % MAX_WAIT_S)
        return w

    # ---- handlers ----

    async def start_task(self, request):
        body = await self._body(request)
        for k in body:
            if k not in TASK_FIELDS:
                raise BadRequest("%s: unknown field (expected %s)" % (k, ", ".join(TASK_FIELDS)))
        wait = self._wait(request)
        sent = await self.plane.start_task(request.match_info["device_id"], body.get("app_id"),
                                           body.get("task_id"), body.get("params"))
        sent["ack"] = await self.plane.wait_ack(sent["req_id"], wait) if wait else None
        return web.json_response(sent, status=200 if sent["ack"] else 202, dumps=_dumps)

    async def add_schedule(self, request):
        body = await self._body(request)
        wait = self._wait(request)
        s = await self.plane.add_schedule(request.match_info["device_id"], body)
        if wait:
            await self.plane.wait_ack(s["last_req_id"], wait)
            s = await self.plane.get_schedule(s["device_id"], s["alarm_id"])
        return web.json_response(s, status=201, dumps=_dumps)

    async def list_schedules(self, request):
        device_id = request.match_info["device_id"]
        return web.json_response({"device_id": device_id,
                                  "schedules": await self.plane.list_schedules(device_id)}, dumps=_dumps)

    async def get_schedule(self, request):
        s = await self.plane.get_schedule(request.match_info["device_id"], request.match_info["alarm_id"])
        return web.json_response(s, dumps=_dumps)

    async def delete_schedule(self, request):
        wait = self._wait(request)
        s = await self.plane.delete_schedule(request.match_info["device_id"], request.match_info["alarm_id"])
        if wait:
            await self.plane.wait_ack(s["last_req_id"], wait)
            s = await self.plane.get_schedule(s["device_id"], s["alarm_id"])
        return web.json_response(s, dumps=_dumps)

    async def device(self, request):
        return web.json_response(await self.plane.device(request.match_info["device_id"]), dumps=_dumps)


def add_routes(app, plane, tokens=(), token_required=False):
    api = ControlApi(plane, tokens, token_required)
    for method, path, name in routes():
        app.router.add_route(method, path, api.wrap(getattr(api, name)))
    return api
