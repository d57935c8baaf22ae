"""The running part of a fake cloud service: a WebSocket server on
127.0.0.1 in its own thread and event loop, so a test's blocked loop
cannot stall it. A fake subclasses it and defines `_handle(ws)` and
`_process_request(connection, request)` (websockets' server hooks).

    class FakeThing(ThreadedWsServer):
        name = "fake-thing"
        ...
    with FakeThing() as fake:
        fake.port

The server logs through `testkit.<name>` at INFO: websockets prints request
headers at DEBUG, and the tests check captured logs for the client's secrets.
"""
import asyncio
import logging
import threading


class ThreadedWsServer:
    name = "fake-ws"
    serve_options: dict = {}

    _loop = _server = _thread = _stop = None

    def start(self):
        from websockets.asyncio.server import serve
        ready = threading.Event()
        logger = logging.getLogger("testkit." + self.name)
        logger.setLevel(logging.INFO)

        async def main():
            self._stop = asyncio.Event()
            async with serve(self._handle, "127.0.0.1", 0, process_request=self._process_request,
                             logger=logger, **self.serve_options) as server:
                self._server = server
                ready.set()
                await self._stop.wait()
                # Drop every connection at once: a polite close would wait for
                # clients whose event loop may be blocked in this stop().
                for ws in list(server.all_connections):
                    ws.transport.abort()

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(main(),),
                                        name=self.name, daemon=True)
        self._thread.start()
        ready.wait()
        return self

    def stop(self):
        if self._loop is not None:
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
        return list(self._server.sockets)[0].getsockname()[1]
