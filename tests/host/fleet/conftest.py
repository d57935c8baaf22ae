"""Nodes in this test process sharing one PostgreSQL schema (the test's own)
and one mosquitto, each a whole server on its own ephemeral ports: what
several `make run` with XIAOZHI_DB_URL and MQTT_URL are, without the
network in between (tests/host/netns has that)."""
import aiohttp
import pytest

from testkit.control_api import Api, control_config
from testkit.mosquitto import Mosquitto
from testkit.node import start_node


@pytest.fixture
def broker():
    b = Mosquitto().start()
    yield b
    b.close()


@pytest.fixture
async def fleet(postgres_cluster, broker, tmp_path):  # noqa: F811
    """start(n=1, **control settings) -> [Api of each node started]; all share the store."""
    started = []

    async def start(n=1, **kw):
        apis = []
        for _ in range(n):
            i = len(started)
            cfg = control_config(tmp_path / ("node%d" % i) / "control.db", broker_url=broker.url, db_url=start.url,
                                 **kw)
            cfg["server"]["public_host"] = "127.0.0.1"
            cfg["fleet"].update(heartbeat_s=0.2, node_ttl_s=1.0, drain_timeout_s=5)
            # No voice here (no session connects): a control-only node, no models to load.
            server = await start_node(cfg, role="control", with_broker=True)
            http = aiohttp.ClientSession()
            started.append((server, http))
            apis.append(Api(server, http))
        return apis

    start.url = postgres_cluster.new_schema_url()      # a test may point it elsewhere
    yield start
    for server, http in started:
        await http.close()
        await server.stop()
