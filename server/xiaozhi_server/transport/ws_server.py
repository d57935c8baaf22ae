"""The xiaozhi WebSocket endpoint: ws://HOST:8000/xiaozhi/v1/.

It checks who connects, then hands the connection to a Session. A refused
device gets close code 1008 (policy violation) with the reason and a log
line; a text frame over the protocol's limit gets 1009 (message too big)
from the WebSocket layer. Neither affects other sessions.
"""
import http
import logging

from websockets.asyncio.server import serve

from .. import protocol as proto
from ..session.session import Session
from . import auth

log = logging.getLogger(__name__)

POLICY_VIOLATION = 1008


class WsServer:
    def __init__(self, services):
        self.services = services
        cfg = services.config["server"]
        self.host = cfg["host"]
        self.port = cfg["ws_port"]
        self.path = cfg["ws_path"]
        self._server = None

    @property
    def url(self):
        return "ws://%s:%d%s" % (self.host, self.port, self.path)

    def _process_request(self, connection, request):
        if request.path.split("?")[0].rstrip("/") != self.path.rstrip("/"):
            return connection.respond(http.HTTPStatus.NOT_FOUND, "the xiaozhi endpoint is %s\n" % self.path)
        return None

    async def _handle(self, connection):
        req = connection.request
        ident = auth.identify(req.path, req.headers)
        peer = "%s:%s" % connection.remote_address[:2] if connection.remote_address else "?"
        try:
            auth.check(ident, self.services.config["auth"])
        except auth.Refusal as e:
            log.warning("refused %s (device %s): %s", peer, ident.device_id, e)
            await connection.close(POLICY_VIOLATION, str(e)[:120])
            return
        session = Session(connection, self.services, ident.device_id or "unknown-" + peer,
                          ident.client_id, ident.version, peer)
        await session.run()

    async def start(self):
        self._server = await serve(
            self._handle, self.host, self.port, process_request=self._process_request,
            max_size=proto.MAX_TEXT_MESSAGE, max_queue=64, compression=None,
            ping_interval=30, ping_timeout=30, close_timeout=2)
        if self.port == 0:
            self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self):
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
