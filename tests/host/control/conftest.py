"""A real mosquitto per test module, and a real server (ephemeral ports,
its own SQLite file) talking to it with the control plane on."""
import itertools

import aiohttp
import pytest

from testkit.mosquitto import Mosquitto
from testkit.mqtt_device import MqttDevice
from testkit.control_api import Api, control_config
from xiaozhi_server.server import XiaozhiServer

_ids = itertools.count(1)


@pytest.fixture(scope="module")
def mosquitto():
    broker = Mosquitto().start()
    yield broker
    broker.close()


@pytest.fixture
async def start_control(tmp_path):
    started = []

    async def start(broker, db_name="control.db", **control):
        server = XiaozhiServer(control_config(broker, tmp_path / db_name, **control),
                               with_broker=True, with_mcp=False)
        await server.start()
        http = aiohttp.ClientSession()
        started.append((server, http))
        return Api(server, http)

    yield start
    for server, http in started:
        await http.close()
        await server.stop()


@pytest.fixture
async def api(start_control, mosquitto):
    return await start_control(mosquitto)


@pytest.fixture
def device_id():
    return "dev%d" % next(_ids)


@pytest.fixture
async def device(mosquitto, device_id):
    async with MqttDevice(mosquitto.port, device_id) as dev:
        yield dev
