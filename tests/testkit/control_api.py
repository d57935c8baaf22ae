"""For the control-plane tests: a server config with its own authenticated
broker (or a given one), the parents' API over real HTTP, and waiting for a
condition."""
import asyncio

from testkit.mosquitto import free_port
from testkit.server import server_config


def control_config(db_path, broker_url=None, mqtt_port=None, **sections):
    """The server starts its own mosquitto (anonymous clients refused, device
    credentials and ACL from the server) on a free loopback port, keeping its
    secret beside db_path; with broker_url it uses that broker instead.
    Other keyword arguments are `control` settings, or whole sections (dicts)."""
    control = {k: v for k, v in sections.items() if not isinstance(v, dict)}
    others = {k: v for k, v in sections.items() if isinstance(v, dict)}
    # The test broker takes anonymous clients (testkit/mosquitto.py): allowed, with a warning.
    mqtt = {"url": broker_url, "allow_open_broker": True} if broker_url else {"port": mqtt_port or free_port()}
    return server_config(mqtt=mqtt, control=dict({"db_path": str(db_path), "reconnect_max_s": 0.5}, **control),
                         **others)


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
