import pytest

from testkit.firmware_process import FirmwareProcess, prepare_state

INTERPRETERS = ["micropython", "cpython"]


@pytest.fixture(params=INTERPRETERS)
def interp(request):
    return request.param


@pytest.fixture
async def launch(tmp_path, interp):
    """launch(server, speed=..., **config) -> a running FirmwareProcess."""
    procs = []

    async def start(srv, speed=4, **config):
        cfg = {"server_url": srv.ws_url, "ota_url": srv.ota_url, "tools_page_bytes": 700,
               "clock_speed": speed}
        cfg.update(config)
        state = prepare_state(tmp_path / "state", cfg)
        fw = await FirmwareProcess.start(interp, state)
        fw.state_dir = state
        procs.append(fw)
        return fw

    yield start
    for fw in procs:
        await fw.close()
