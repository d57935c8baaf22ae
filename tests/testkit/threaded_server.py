"""The running part of every fake service (a cloud model, a speech service):
a server on 127.0.0.1 in its own thread and event loop, so a test's blocked
loop cannot stall it, and a sync test or a bench process can use it too.

A fake subclasses one of the two flavours and adds its protocol:

    class FakeThing(ThreadedWsServer):          # WebSocket: websockets' server hooks
        name = "fake-thing"
        async def _handle(self, ws): ...
        def _process_request(self, connection, request): ...

    class FakeApi(ThreadedHttpServer):          # HTTP: aiohttp routes
        name = "fake-api"
        def _routes(self, app): app.router.add_post("/v1/x", self._x)

    with FakeThing() as fake:                   # or fake = FakeThing().start() ... fake.stop()
        fake.port

`_started()` and `_stopping()` run on the server's loop, after it listens
and before it closes (a fake makes its loop's events there). Stopping drops
every connection at once: a polite close would wait for clients whose event
loop may be blocked in this stop().

The server logs through `testkit.<name>` at INFO: websockets prints request
headers at DEBUG, and the tests check captured logs for the client's secrets.
"""
import asyncio
import contextlib
import logging
import threading

# A deep accept queue: at 200 sessions many turns start at once, and a
# dropped SYN costs the client a second of TCP retransmission.
BACKLOG = 1024


class ThreadedServer:
    name = "fake"
    _loop = _thread = _stop = None
    sockets = ()

    def _serving(self):
        """An async context manager: listening on 127.0.0.1 inside, its sockets as value."""
        raise NotImplementedError

    def _started(self):
        pass

    def _stopping(self):
        pass

    def start(self):
        ready = threading.Event()
        failed = []

        async def main():
            self._stop = asyncio.Event()
            try:
                async with self._serving() as sockets:
                    self.sockets = list(sockets)
                    self._started()
                    ready.set()
                    await self._stop.wait()
                    self._stopping()
            except Exception as e:
                failed.append(e)
            finally:
                ready.set()

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(main(),),
                                        name=self.name, daemon=True)
        self._thread.start()
        ready.wait()
        if failed:
            self.stop()
            raise failed[0]
        return self

    def stop(self):
        if self._loop is not None:
            if self._thread.is_alive():
                self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(10)
            self._loop.close()
            self._loop = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self):
        return self.sockets[0].getsockname()[1]

    def _logger(self):
        logger = logging.getLogger("testkit." + self.name)
        logger.setLevel(logging.INFO)
        return logger


class ThreadedWsServer(ThreadedServer):
    name = "fake-ws"
    serve_options: dict = {}    # more of websockets' serve() options (an instance may set its own)

    @contextlib.asynccontextmanager
    async def _serving(self):
        from websockets.asyncio.server import serve
        async with serve(self._handle, "127.0.0.1", 0, process_request=self._process_request,
                         logger=self._logger(), **self.serve_options) as server:
            self._server = server
            try:
                yield server.sockets
            finally:
                for ws in list(server.all_connections):
                    ws.transport.abort()


class ThreadedHttpServer(ThreadedServer):
    name = "fake-http"

    def _routes(self, app):
        raise NotImplementedError

    @contextlib.asynccontextmanager
    async def _serving(self):
        from aiohttp import web
        app = web.Application(logger=self._logger())
        self._routes(app)
        # No grace at stop: a reply still streaming is cut, as a dropped server cuts it.
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=BACKLOG)
        await site.start()
        try:
            yield site._server.sockets
        finally:
            for proto in list(getattr(runner.server, "connections", ())):
                proto.force_close()
            await runner.cleanup()
