"""The xiaozhi WebSocket endpoint: ws://HOST:8000/xiaozhi/v1/ (wss:// with
a certificate configured: tls.py).

It checks who connects, then hands the connection to a Session. A refused
device gets close code 1008 (policy violation) with the reason and a log
line; a text frame over the protocol's limit gets 1009 (message too big)
from the WebSocket layer. Neither affects other sessions.

The edge, before any session code runs:
- every connection passes a ConnectionGuard (guard.py): it is pending until
  the device's hello, a pending one is closed after the handshake and hello
  timeouts or when too many are pending, and beyond the connection cap new
  ones are refused;
- the opening handshake must finish within limits.ws_handshake_timeout_s;
- the session reads through a LimitedConnection (ratelimit.py): text and
  binary frames over the connection's rate are dropped, and a connection
  that keeps flooding is closed with 1008.
"""
from __future__ import annotations

import http
import logging
import socket
from typing import TYPE_CHECKING

from websockets.asyncio.server import Server, ServerConnection, serve

from .. import protocol as proto
from ..config import SessionConfig
from ..logthrottle import LogThrottle
from ..session.session import Session
from . import auth, tls
from .device_sessions import DeviceSessions
from .guard import ConnectionGuard, accept_burst
from .ratelimit import LimitedConnection, RateStats

if TYPE_CHECKING:
    from ..services import Services

log = logging.getLogger(__name__)
# The websockets library logs every connection opened and closed at INFO:
# under a connection flood that is the log filling up. Its warnings stay.
LIBRARY_LOG = "xiaozhi_server.transport.websockets"
logging.getLogger(LIBRARY_LOG).setLevel(logging.WARNING)

POLICY_VIOLATION = 1008


class _GuardedConnection(ServerConnection):
    """Asks the server's guard before the handshake starts; tells it at the end."""

    guard = None

    def connection_made(self, transport):
        super().connection_made(transport)
        if not self.guard.admit(transport):
            transport.abort()

    def connection_lost(self, exc):
        self.guard.closed(self.transport)
        super().connection_lost(exc)


class WsServer:
    def __init__(self, services: Services) -> None:
        self.services = services
        # fn(device_id, token) -> bool: a device's own token (the control plane sets it).
        self.device_token_ok = None
        cfg = services.config["server"]
        self.host = cfg["host"]
        self.port = cfg["ws_port"]
        self.path = cfg["ws_path"]
        self.ssl = tls.server_context(services.config)
        self.limits = services.config["limits"]
        hello_s = SessionConfig.of(services.config).hello_timeout_s
        self.guard = ConnectionGuard("WebSocket", int(self.limits["ws_max_connections"]),
                                     int(self.limits["ws_max_pending"]),
                                     float(self.limits["ws_handshake_timeout_s"]) + hello_s,
                                     float(self.limits["log_interval_s"]))
        self.log_throttle = LogThrottle(log, interval_s=float(self.limits["log_interval_s"]))
        self.rate_stats = RateStats()
        self.device_sessions = DeviceSessions()
        self._servers: list[Server] = []

    @property
    def url(self) -> str:
        return "%s://%s:%d%s" % ("wss" if self.ssl else "ws", self.host, self.port, self.path)

    def _process_request(self, connection, request):
        if request.path.split("?")[0].rstrip("/") != self.path.rstrip("/"):
            return connection.respond(http.HTTPStatus.NOT_FOUND, "the xiaozhi endpoint is %s\n" % self.path)
        return None

    async def _handle(self, connection):
        req = connection.request
        ident = auth.identify(req.path, req.headers)
        peer = "%s:%s" % connection.remote_address[:2] if connection.remote_address else "?"
        try:
            how = auth.check(ident, self.services.config["auth"], self.device_token_ok)
        except auth.Refusal as e:
            self.log_throttle.log(logging.WARNING, "refused connections",
                                  "refused %s (device %s): %s", peer, ident.device_id, e)
            await connection.close(POLICY_VIOLATION, str(e)[:120])
            return
        name = ident.device_id or "unknown-" + peer
        limited = LimitedConnection(connection, self.limits, self.rate_stats, self.log_throttle, name)
        session = Session(limited, self.services, name, ident.client_id, ident.version, peer)
        if how == auth.SHARED and not self.services.config["auth"].get("shared_token_history"):
            # Its Device-Id is only a claim: not the key to a child's history.
            session.without_history()
        transport = connection.transport

        def hello_seen():
            # The device proved itself: no longer a pending connection, and
            # the device's newest session (an older one is told and closed).
            self.guard.busy(transport)
            if ident.device_id and not session.closed:
                self.device_sessions.claim(ident.device_id, session)
        session.on_hello = hello_seen
        try:
            await session.run()
        finally:
            if ident.device_id:
                self.device_sessions.gone(ident.device_id, session)

    def _connection_class(self):
        return type("GuardedConnection", (_GuardedConnection,), {"guard": self.guard})

    async def start(self, sockets: list[socket.socket] | None = None) -> WsServer:
        """Listen on host:port, or serve listening `sockets` made elsewhere
        (a worker's, inherited from the primary: shard/)."""
        kw = dict(process_request=self._process_request,
                  max_size=proto.MAX_TEXT_MESSAGE, max_queue=64, compression=None,
                  ping_interval=30, ping_timeout=30, close_timeout=2,
                  open_timeout=float(self.limits["ws_handshake_timeout_s"]),
                  create_connection=self._connection_class(), logger=logging.getLogger(LIBRARY_LOG),
                  backlog=accept_burst(self.guard.max_pending))
        if self.ssl is not None:
            # The guard sees a connection once its TLS handshake is done:
            # a handshake that never ends is cut by the same timeout.
            kw.update(ssl=self.ssl, ssl_handshake_timeout=float(self.limits["ws_handshake_timeout_s"]))
        if sockets:
            self._servers = [await serve(self._handle, sock=s, **kw) for s in sockets]
        else:
            self._servers = [await serve(self._handle, self.host, self.port, **kw)]
        if self.port == 0:
            self.port = self._servers[0].sockets[0].getsockname()[1]
        return self

    def stop_accepting(self) -> None:
        """Close the listening sockets; open sessions go on (a draining node)."""
        for server in self._servers:
            server.close(close_connections=False)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for server in self._servers:
            await server.wait_closed()
        self.guard.stop()
