"""The parents' HTTP API (JSON in and out), added to the server's aiohttp app.

    add_routes(app, plane, tokens=[...], token_required=True)

Every answer is JSON; an error is {"error": {"code", "message"}} with the
HTTP status of its ControlError (400 names the field, 404, 409, 412 when
If-Match names an old revision, 429 when the device has too many requests
waiting for acks, 503 when the broker is away, 401 without a valid token).
A schedule's answer carries its revision as the ETag. Text that is not
Unicode (a lone surrogate) is refused with 400 at the edge, and anything
read back is sent as valid JSON whatever was stored. docs/api.md and
docs/openapi.yaml describe the routes; a test checks they list every one.

Callers prove they are the parent with `Authorization: Bearer <token>`, or
with the console's session cookie (console_sessions.py; POST /api/session
trades the token for it). A cookie rides along with any request the
browser makes, so a cookie-authenticated write must also carry the header
X-Xiaozhi-Console (a form or image on another site cannot set it), and a
write the browser marks as coming from another site (Sec-Fetch-Site) is
refused whatever it carries: that also covers the loopback default, where
no token is asked for.

DNS rebinding (local_origin.py): on a server bound to loopback, a request
answered without a token (the loopback default, the login, a console
cookie) must name loopback in its Host and Origin; a page on another name
that resolves to 127.0.0.1 gets 403. A bearer token proves itself wherever
it comes from.
"""
import hmac
import json
import logging

from aiohttp import web

from .. import protocol as proto
from ..local_origin import loopback_named
from ..logthrottle import LogThrottle
from ..control import checks
from .care import CareApi
from .console_sessions import COOKIE, ConsoleSessions
from .login_throttle import LoginThrottle
from ..errors import BadRequest, ControlError, Forbidden, NotFound, Unauthorized

log = logging.getLogger(__name__)

PREFIX = "/api/devices/{device_id}"
MAX_WAIT_S = 30.0
MAX_BODY = 1 << 20     # the HTTP edge refuses bigger bodies first (413)
TASK_FIELDS = ("app_id", "task_id", "params")
MAX_HOUSEHOLD = 32     # devices of one home; more is a fleet, not a household
CONSOLE_HEADER = "X-Xiaozhi-Console"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
# Handlers that run without a token: the login itself, and the logout and
# "am I logged in?" that only touch the caller's own cookie.
OPEN_HANDLERS = ("session", "login", "logout")


def routes():
    """(method, path, handler name) of every route; the docs test reads this."""
    return (
        ("GET", PREFIX, "device"),
        ("POST", PREFIX + "/tasks", "start_task"),
        ("POST", PREFIX + "/schedules", "add_schedule"),
        ("GET", PREFIX + "/schedules", "list_schedules"),
        ("GET", PREFIX + "/schedules/{alarm_id}", "get_schedule"),
        ("PUT", PREFIX + "/schedules/{alarm_id}", "update_schedule"),
        ("DELETE", PREFIX + "/schedules/{alarm_id}", "delete_schedule"),
        ("POST", PREFIX + "/credentials", "provision"),
        ("DELETE", PREFIX + "/credentials", "revoke"),
        ("GET", "/api/activations", "list_activations"),
        ("GET", PREFIX + "/conversation", "get_conversation"),
        ("PUT", PREFIX + "/conversation", "put_conversation"),
        ("DELETE", PREFIX + "/conversation", "delete_conversation"),
        ("POST", "/api/activations/{code}", "approve"),
        ("DELETE", "/api/activations/{code}", "clear_activation"),
        ("PUT", "/api/households/{household_id}", "put_household"),
        ("GET", "/api/households/{household_id}", "get_household"),
        ("GET", "/api/nodes", "nodes"),
        ("GET", "/api/devices", "list_devices"),
        ("PATCH", PREFIX, "rename_device"),
        ("DELETE", PREFIX, "forget_device"),
        ("GET", PREFIX + "/lessons", "lessons"),
        ("GET", PREFIX + "/limits", "get_limits"),
        ("PUT", PREFIX + "/limits", "put_limits"),
        ("GET", PREFIX + "/usage", "usage"),
        # what the family keeps per device (care.py)
        ("GET", PREFIX + "/topics", "get_topics"),
        ("PUT", PREFIX + "/topics", "put_topics"),
        ("GET", PREFIX + "/flags", "list_flags"),
        ("DELETE", PREFIX + "/flags/{flag_id}", "review_flag"),
        ("GET", PREFIX + "/privacy", "get_privacy"),
        ("PUT", PREFIX + "/privacy", "put_privacy"),
        ("GET", PREFIX + "/transcripts", "list_transcripts"),
        ("DELETE", PREFIX + "/transcripts", "delete_transcripts"),
        ("GET", PREFIX + "/memory", "get_memory"),
        ("PUT", PREFIX + "/memory", "put_memory"),
        ("DELETE", PREFIX + "/memory", "delete_memory"),
        ("POST", "/api/nodes/{node_id}/drain", "drain_node"),
        ("GET", "/api/session", "session"),
        ("POST", "/api/session", "login"),
        ("DELETE", "/api/session", "logout"),
    )


def error_response(e):
    body = {"error": {"code": e.code, "message": e.message}}
    body.update(e.extra)
    retry = getattr(e, "retry_after_s", None)     # DeviceBusy, TooManyAttempts
    headers = {"Retry-After": "%d" % max(1, round(retry))} if retry is not None else None
    return web.json_response(body, status=e.status, dumps=_dumps, headers=headers)


def _dumps(obj):
    text = json.dumps(obj, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Stored before the edge refused such text (or reported by a device):
        # \u escapes keep the answer valid JSON instead of a 500.
        return json.dumps(obj)
    return text


def _schedule_response(s, status=200):
    return web.json_response(s, status=status, dumps=_dumps, headers={"ETag": '"%d"' % s["revision"]})


def if_match(request):
    """None (no If-Match), "*", or the revisions an If-Match header names
    (unreadable entries match nothing, so they give 412)."""
    raw = request.headers.get("If-Match")
    if raw is None:
        return None
    if raw.strip() == "*":
        return "*"
    out = []
    for tag in raw.split(","):
        tag = tag.strip()
        if tag.startswith("W/"):
            continue  # a weak tag never matches for a write (RFC 9110 13.1.1)
        if len(tag) >= 2 and tag[0] == tag[-1] == '"' and tag[1:-1].isdigit():
            out.append(int(tag[1:-1]))
    return out


class ControlApi(CareApi):
    def __init__(self, plane, tokens=(), token_required=False, local_only=False):
        self.plane = plane
        self.tokens = [t for t in tokens if t]
        self.token_required = token_required or bool(self.tokens)
        self.local_only = local_only    # bound to loopback: tokenless answers need loopback names
        self.sessions = ConsoleSessions()
        self.refusals = LogThrottle(log)      # wrong console tokens: a few lines, then a count
        self.rebinds = LogThrottle(log)       # requests under a name that is not loopback
        self.guesses = LoginThrottle()        # wrong tokens per address: 429 past a few

    def _authorize(self, request):
        _same_site(request)
        if not self.token_required:
            self._loopback_named(request)
            return
        if not self.tokens:
            raise Unauthorized("this server is not on loopback: set control.api_token to use the API")
        if "Authorization" in request.headers:
            self.guesses.check(request.remote)
            scheme, _, given = request.headers["Authorization"].partition(" ")
            if scheme.lower() != "bearer" or not self._accepted(given.strip()):
                self.guesses.failed(request.remote)
                raise Unauthorized("send Authorization: Bearer <control.api_token>")
            return
        self._loopback_named(request)
        if self.sessions.token(request.cookies.get(COOKIE), self.tokens) is None:
            raise Unauthorized("send Authorization: Bearer <control.api_token>, or log in on the console")
        _console_header(request)

    def _loopback_named(self, request):
        if self.local_only and not loopback_named(request.headers):
            self.rebinds.log(logging.WARNING, "API requests under a name that is not loopback",
                             "%s %s refused: Host %r / Origin %r is not a loopback name (DNS rebinding?)",
                             request.method, request.path, request.headers.get("Host"), request.headers.get("Origin"))
            raise Forbidden("this server is on loopback: open it as http://127.0.0.1, http://[::1] or "
                            "http://localhost (a page under another name may not use it)")

    def _accepted(self, token):
        return any(hmac.compare_digest(token, t) for t in self.tokens)

    def wrap(self, handler, name):
        async def run(request):
            try:
                if name in OPEN_HANDLERS:
                    _same_site(request)
                    self._loopback_named(request)
                else:
                    self._authorize(request)
                return await handler(request)
            except ControlError as e:
                if e.status >= 500:
                    log.warning("%s %s: %s", request.method, request.path, e.message)
                return error_response(e)
        return run

    @staticmethod
    def _json(obj, status=200):
        return web.json_response(obj, status=status, dumps=_dumps)

    # ---- reading the request ----

    @staticmethod
    async def _body(request):
        """The JSON object of the body through the protocol's shared decode:
        not JSON, not an object, nested too deep or holding a lone surrogate
        is a 400 naming why (the field, for a surrogate)."""
        try:
            text = await request.text()
        except UnicodeDecodeError as e:
            raise BadRequest("the body must be UTF-8 JSON (%s)" % e)
        try:
            body = proto.decode_json(text or "null", MAX_BODY)
        except proto.ProtoError as e:
            raise BadRequest("the body must be a JSON object: %s" % str(e).replace("message", "body", 1))
        return checks.text(body, "body")

    @staticmethod
    def _path(request, name):
        return checks.text(request.match_info[name], name)

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
        sent = await self.plane.start_task(self._path(request, "device_id"), body.get("app_id"),
                                           body.get("task_id"), body.get("params"))
        sent["ack"] = await self.plane.wait_ack(sent["req_id"], wait) if wait else None
        return web.json_response(sent, status=200 if sent["ack"] else 202, dumps=_dumps)

    async def _after(self, s, wait):
        if wait:
            await self.plane.wait_ack(s["last_req_id"], wait)
            s = await self.plane.get_schedule(s["device_id"], s["alarm_id"])
        return s

    async def add_schedule(self, request):
        body = await self._body(request)
        wait = self._wait(request)
        s = await self.plane.add_schedule(self._path(request, "device_id"), body)
        return _schedule_response(await self._after(s, wait), 201)

    async def list_schedules(self, request):
        device_id = self._path(request, "device_id")
        return web.json_response({"device_id": device_id,
                                  "schedules": await self.plane.list_schedules(device_id)}, dumps=_dumps)

    async def get_schedule(self, request):
        s = await self.plane.get_schedule(self._path(request, "device_id"), self._path(request, "alarm_id"))
        return _schedule_response(s)

    async def update_schedule(self, request):
        body = await self._body(request)
        wait = self._wait(request)
        s = await self.plane.update_schedule(self._path(request, "device_id"), self._path(request, "alarm_id"),
                                             body, if_match(request))
        return _schedule_response(await self._after(s, wait))

    async def delete_schedule(self, request):
        wait = self._wait(request)
        s = await self.plane.delete_schedule(self._path(request, "device_id"), self._path(request, "alarm_id"),
                                             if_match(request))
        return _schedule_response(await self._after(s, wait))

    async def device(self, request):
        return web.json_response(await self.plane.device(self._path(request, "device_id")), dumps=_dumps)

    async def get_conversation(self, request):
        return web.json_response(await self.plane.conversation(self._path(request, "device_id")), dumps=_dumps)

    async def put_conversation(self, request):
        body = await self._body(request)
        return web.json_response(await self.plane.set_conversation(self._path(request, "device_id"), body),
                                 dumps=_dumps)

    async def delete_conversation(self, request):
        return web.json_response(await self.plane.erase_conversation(self._path(request, "device_id")),
                                 dumps=_dumps)

    async def provision(self, request):
        device_id = checks.device_id(self._path(request, "device_id"))
        if self.plane.devices is None:
            raise NotFound("this server keeps no device credentials")
        return web.json_response(await self.plane.devices.provision(device_id), dumps=_dumps)

    async def revoke(self, request):
        device_id = checks.device_id(self._path(request, "device_id"))
        if self.plane.devices is None or not await self.plane.devices.revoke(device_id):
            raise NotFound("device %s has no credentials here" % device_id)
        return web.Response(status=204)

    async def approve(self, request):
        code = self._path(request, "code")
        if self.plane.devices is None or not code.isdigit():
            raise NotFound("no activation code %s" % code)
        device_id = await self.plane.devices.approve(code)
        if device_id is None:
            raise NotFound("no activation code %s is waiting (unknown, expired or already approved)" % code)
        return web.json_response({"code": code, "device_id": device_id, "activated": True}, dumps=_dumps)

    # ---- a family's console: devices, limits, usage ----

    async def list_devices(self, request):
        return web.json_response({"devices": await self.plane.list_devices()}, dumps=_dumps)

    async def rename_device(self, request):
        body = await self._body(request)
        return web.json_response(await self.plane.rename_device(self._path(request, "device_id"), body),
                                 dumps=_dumps)

    async def forget_device(self, request):
        await self.plane.forget_device(self._path(request, "device_id"))
        return web.Response(status=204)

    async def lessons(self, request):
        device_id = self._path(request, "device_id")
        return web.json_response({"device_id": device_id, "lessons": await self.plane.lessons(device_id)},
                                 dumps=_dumps)

    async def get_limits(self, request):
        return web.json_response(await self.plane.get_limits(self._path(request, "device_id")), dumps=_dumps)

    async def put_limits(self, request):
        body = await self._body(request)
        return web.json_response(await self.plane.put_limits(self._path(request, "device_id"), body),
                                 dumps=_dumps)

    async def usage(self, request):
        return web.json_response(await self.plane.usage(self._path(request, "device_id"),
                                                        request.query.get("days")), dumps=_dumps)

    async def list_activations(self, request):
        waiting = await self.plane.devices.waiting_activations() if self.plane.devices is not None else []
        return web.json_response({"waiting": waiting}, dumps=_dumps)

    async def clear_activation(self, request):
        code = self._path(request, "code")
        if self.plane.devices is None or not code.isdigit() or not await self.plane.devices.clear_activation(code):
            raise NotFound("no activation code %s is waiting (unknown, expired or already approved)" % code)
        return web.Response(status=204)

    async def put_household(self, request):
        """The household is exactly the devices listed (nearest device answers, docs/server.md)."""
        household_id = self._household_id(request)
        body = await self._body(request)
        for k in body:
            if k != "devices":
                raise BadRequest("%s: unknown field (expected devices)" % k)
        devices = body.get("devices")
        if not isinstance(devices, list) or len(devices) > MAX_HOUSEHOLD or \
                not all(isinstance(d, str) for d in devices):
            raise BadRequest("devices must be a list of at most %d device ids" % MAX_HOUSEHOLD)
        devices = sorted({checks.device_id(d) for d in devices})
        await self.plane.store.wake.set_household(household_id, devices)
        return web.json_response({"household_id": household_id, "devices": devices}, dumps=_dumps)

    async def get_household(self, request):
        household_id = self._household_id(request)
        return web.json_response({"household_id": household_id,
                                  "devices": await self.plane.store.wake.household(household_id)}, dumps=_dumps)

    def _household_id(self, request):
        try:
            return checks.device_id(self._path(request, "household_id"))
        except BadRequest as e:
            raise BadRequest(e.message.replace("device_id", "household_id"))

    # ---- the console's login (a cookie session) ----

    async def session(self, request):
        """200 while this caller may use the API (its cookie, its bearer
        token, or no token asked for), else 401: the page asks this first."""
        self._authorize(request)
        return web.json_response({"logged_in": True, "token_required": self.token_required})

    async def login(self, request):
        body = await self._body(request)
        token = body.get("token")
        if not isinstance(token, str):
            raise BadRequest("token: the API token is a string")
        if self.token_required:
            if not self.tokens:
                raise Unauthorized("this server is not on loopback: set control.api_token to use the API")
            self.guesses.check(request.remote)
            if not self._accepted(token):
                self.guesses.failed(request.remote)
                self.refusals.log(logging.WARNING, "console logins refused",
                                  "console login refused: wrong token (from %s)", request.remote)
                raise Unauthorized("token: that is not this server's API token")
        response = web.Response(status=204)
        response.set_cookie(COOKIE, self.sessions.open(token), httponly=True, samesite="Strict", path="/",
                            secure=request.secure)
        return response

    async def logout(self, request):
        _console_header(request)
        self.sessions.close(request.cookies.get(COOKIE))
        response = web.Response(status=204)
        response.del_cookie(COOKIE, path="/")
        return response

    async def nodes(self, request):
        return web.json_response({"this_node": self.plane.node_id, "nodes": await self.plane.nodes()}, dumps=_dumps)

    async def drain_node(self, request):
        node = await self.plane.drain_node(self._path(request, "node_id"))
        return web.json_response(node, status=202, dumps=_dumps)


def _same_site(request):
    """A write the browser says another site asked for is refused (the
    loopback default asks no token, so nothing else would stop it)."""
    if request.method not in SAFE_METHODS and \
            request.headers.get("Sec-Fetch-Site", "").lower() in ("cross-site", "same-site"):
        raise Forbidden("requests from another site may not change anything here")


def _console_header(request):
    if request.method not in SAFE_METHODS and request.headers.get(CONSOLE_HEADER) != "1":
        raise Forbidden("a console request must carry the header %s: 1" % CONSOLE_HEADER)


def add_routes(app, plane, tokens=(), token_required=False, local_only=False):
    api = ControlApi(plane, tokens, token_required, local_only)
    for method, path, name in routes():
        app.router.add_route(method, path, api.wrap(getattr(api, name), name))
    return api
