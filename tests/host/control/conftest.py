"""A real server (ephemeral ports, its own control store: a SQLite file, and
again a PostgreSQL schema for a test about the store, testkit.postgres.BOTH_STORES) with the control
plane on and its own mosquitto, which refuses anonymous clients and checks
each device's credentials and topics; devices connect with the credentials
the server gives them."""
import itertools

import aiohttp
import pytest

from testkit.mqtt_device import MqttDevice
from testkit.control_api import Api, control_config
from testkit.node import start_node

_ids = itertools.count(1)


@pytest.fixture
async def start_control(tmp_path, server_db):
    started = []

    async def start(db_name="control.db", **kw):
        target = server_db(db_name)
        if target.startswith("postgresql://"):
            kw.setdefault("db_url", target)     # the server's secret still lives beside db_path
        server = await start_node(control_config(tmp_path / db_name, **kw), with_broker=True)
        http = aiohttp.ClientSession()
        started.append((server, http))
        return Api(server, http)

    yield start
    for server, http in started:
        await http.close()
        await server.stop()


@pytest.fixture
async def api(start_control):
    return await start_control()


@pytest.fixture
def device_id():
    return "dev%d" % next(_ids)


@pytest.fixture
async def device(api, device_id):
    async with await MqttDevice.provisioned(api.server, device_id) as dev:
        yield dev
