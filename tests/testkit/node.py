"""One way to start a node, for tests and benches: the real server
(xiaozhi_server.server.XiaozhiServer) on its config's ports (the test
configs of testkit.server and testkit.control_api give it free loopback
ones), and stopped again if its start fails half-way, so a failed start
leaks no mosquitto, worker process or port.

    server = await start_node(cfg)                             # one process: voice and control
    server = await start_node(cfg, workers=2, with_broker=True)   # a primary and 2 worker processes
    server = await start_node(cfg, role="control", with_broker=True)  # control only: no voice models
    async with node(cfg) as server: ...                        # stopped at the end

with_broker: the node starts the mosquitto its config names (control_config
gives it a free port), as `make run` does; off, a config's mqtt.url is a
broker started elsewhere (or none). with_mcp: the server MCP processes of
mcp.servers; off by default, a test that needs them says so.

In pytest the `start_server` fixture (testkit/fixtures.py) stops every node
its test started; a synchronous test or bench runs a node on a thread of its
own with testkit.server_thread.ServerThread, which starts it here too.
"""
import contextlib

from xiaozhi_server.server import XiaozhiServer

ROLES = (None, "control")   # None: one process, or a primary when server.workers > 1


async def start_node(cfg, workers=None, role=None, with_broker=False, with_mcp=False, **kw):
    """A started XiaozhiServer. workers=N sets server.workers (N > 1: a
    primary and N worker processes); role="control": the control plane only."""
    if role not in ROLES:
        raise ValueError("role %r: a test node is one of %r" % (role, ROLES))
    if workers is not None:
        cfg["server"]["workers"] = workers
    server = XiaozhiServer(cfg, role=role, with_broker=with_broker, with_mcp=with_mcp, **kw)
    try:
        await server.start()
    except BaseException:
        await server.stop()
        raise
    return server


@contextlib.asynccontextmanager
async def node(cfg, **kw):
    server = await start_node(cfg, **kw)
    try:
        yield server
    finally:
        await server.stop()
