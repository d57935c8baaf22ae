"""The real server on loopback (ephemeral ports) in a background thread with
its own event loop, for synchronous tests such as the HIL suite (the node
is started by testkit/node.py, as every test's is).

    with ServerThread(server_config(llm.base_url)) as srv:
        srv.ws_url, srv.ota_url
        srv.call(coro_fn, *args)    # run a coroutine on the server's loop
"""
import asyncio
import concurrent.futures
import threading

from testkit.node import start_node


class ServerThread:
    def __init__(self, cfg, **kw):
        self._cfg, self._kw = cfg, kw
        self.loop = asyncio.new_event_loop()
        self.server = None
        self._thread = threading.Thread(target=self.loop.run_forever, name="xiaozhi-server", daemon=True)

    def start(self, timeout=30):
        self._thread.start()
        self.server = self.call(start_node, self._cfg, timeout=timeout, **self._kw)
        self.ws_url = self.server.ws.url
        self.ota_url = self.server.http.ota_url
        return self

    def call(self, coro_fn, *args, timeout=30, **kw):
        fut = asyncio.run_coroutine_threadsafe(coro_fn(*args, **kw), self.loop)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise

    def stop(self):
        if self.server is not None:
            self.call(self.server.stop)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
