"""Local servers for provider tests: an aiohttp app on an ephemeral
loopback port, and a port where nothing listens (a service that is down).

    runner, url = await serve(app)     # url = "http://127.0.0.1:<port>"
    ...
    await runner.cleanup()

On the test's own loop, unlike the shared fakes (testkit/threaded_server.py):
the handlers here are a test's own, and share its loop's events (a reply
held until the test releases it).
"""
import socket

from aiohttp import web


async def serve(app):
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, "http://127.0.0.1:%d" % port


def unused_port():
    """A loopback port nothing listens on (bound, then released at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
