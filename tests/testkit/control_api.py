"""For the control-plane tests: a server config pointing at a test
broker, the parents' API over real HTTP, and waiting for a condition."""
import asyncio

from testkit.server import server_config


def control_config(broker, db_path, **control):
    return server_config(mqtt={"url": broker.url},
                         control=dict({"db_path": str(db_path), "reconnect_max_s": 0.5}, **control))


class Api:
    """The parents' API of one running server, over real HTTP."""

    def __init__(self, server, http):
        self.server = server
        self.base = "http://127.0.0.1:%d" % server.http.port
        self.http = http

    async def call(self, method, path, body=None, headers=None, **query):
        async with self.http.request(method, self.base + path, json=body, params=query or None,
                                     headers=headers) as r:
            return r.status, await r.json()

    def post(self, path, body, **q):
        return self.call("POST", path, body, **q)

    def get(self, path, **q):
        return self.call("GET", path, **q)

    def delete(self, path, **q):
        return self.call("DELETE", path, **q)



async def eventually(check, timeout=5.0, step=0.05):
    """Wait until check() (sync or async) is truthy; its value, or AssertionError."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met within %.1f s" % timeout)
        await asyncio.sleep(step)
