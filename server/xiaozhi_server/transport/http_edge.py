"""What every HTTP request passes before its handler (port 8003).

aiohttp reads request lines and headers with no deadline of its own, and a
body only as fast as the client sends it. Here:

- `serve()` listens through a ConnectionGuard (guard.py): a connection
  whose request line and headers do not arrive within the header timeout
  is closed, as is the oldest waiting one when too many wait, and beyond
  the connection cap new ones are refused;
- `edge_middleware` marks a connection busy while a request is handled,
  refuses a declared body over the limit with 413 at once, and reads the
  body under the body timeout (408 and the connection closed if it is too
  slow); handlers then read the cached body;
- `cors_middleware` answers a browser's preflight (OPTIONS with Origin and
  Access-Control-Request-Method) for the device endpoints and adds
  Access-Control-Allow-Origin to their answers, so a web client (the
  stock server's browser test page, say) can call OTA.
"""
import asyncio
import logging
import re

from aiohttp import web

from .guard import ConnectionGuard, GuardedProtocol, accept_burst

log = logging.getLogger(__name__)

CORS_METHODS = "GET, POST, OPTIONS"
CORS_MAX_AGE = "86400"
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")


def make_guard(limits):
    return ConnectionGuard("HTTP", int(limits["http_max_connections"]), int(limits["http_max_pending"]),
                           float(limits["http_header_timeout_s"]), float(limits["log_interval_s"]))


async def serve(runner, guard, host, port, ssl=None, handshake_timeout_s=None):
    """Listen for `runner` (a set-up web.AppRunner) with every connection
    through `guard`; with `ssl` (a server SSLContext) on HTTPS, the guard
    seeing a connection once its TLS handshake is done (within handshake_timeout_s)."""
    loop = asyncio.get_running_loop()
    factory = runner.server
    tls = dict(ssl=ssl, ssl_handshake_timeout=handshake_timeout_s) if ssl is not None else {}
    return await loop.create_server(lambda: GuardedProtocol(factory(), guard), host, port,
                                    backlog=accept_burst(guard.max_pending), reuse_address=True, **tls)


def edge_middleware(guard, limits, throttle):
    max_body = int(limits["http_max_body"])
    body_timeout = float(limits["http_body_timeout_s"])

    @web.middleware
    async def edge(request, handler):
        transport = request.transport
        if transport is not None:
            guard.busy(transport)
        try:
            if request.content_length is not None and request.content_length > max_body:
                throttle.log(logging.WARNING, "HTTP bodies over the limit",
                             "HTTP %s %s: a body of %d bytes refused (limit %d)",
                             request.method, request.path, request.content_length, max_body)
                return _closing(web.json_response(
                    {"error": "the request body is over the %d byte limit" % max_body}, status=413))
            if request.can_read_body:
                try:
                    await asyncio.wait_for(request.read(), body_timeout)
                except asyncio.TimeoutError:
                    throttle.log(logging.WARNING, "HTTP bodies too slow",
                                 "HTTP %s %s: the body did not arrive within %g s: closed",
                                 request.method, request.path, body_timeout)
                    return _closing(web.json_response(
                        {"error": "the request body did not arrive within %g s" % body_timeout}, status=408))
            return await handler(request)
        finally:
            if transport is not None:
                guard.idle(transport)
    return edge


def _closing(response):
    response.force_close()
    return response


def cors_middleware(prefixes):
    """CORS for paths starting with one of `prefixes` (the device endpoints).

    Any origin may call them: they hand out nothing a device could not
    fetch itself, browsers send no cookies here, and a device's own
    credentials (Device-Id, Authorization) are still checked by the
    handler. The requested headers are echoed when each is a plain header
    name (a wildcard would not cover Authorization)."""

    def covered(path):
        return any(path.startswith(p) for p in prefixes)

    @web.middleware
    async def cors(request, handler):
        if not covered(request.path) or "Origin" not in request.headers:
            return await handler(request)
        if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            response = web.Response(status=204)
            wanted = [h.strip() for h in request.headers.get("Access-Control-Request-Headers", "").split(",")]
            wanted = [h for h in wanted if h and _HEADER_NAME.match(h)]
            if wanted:
                response.headers["Access-Control-Allow-Headers"] = ", ".join(wanted)
            response.headers["Access-Control-Allow-Methods"] = CORS_METHODS
            response.headers["Access-Control-Max-Age"] = CORS_MAX_AGE
        else:
            try:
                response = await handler(request)
            except web.HTTPException as e:
                e.headers["Access-Control-Allow-Origin"] = "*"
                raise
        response.headers["Access-Control-Allow-Origin"] = "*"
        return response
    return cors
