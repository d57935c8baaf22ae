"""Hardware-in-the-loop: the same tests drive a real board or the simulated one
over a serial console (pytest-embedded's serial DUT).

    pytest tests/hil --sim                              # server + simulated board on a pty
    pytest tests/hil --sim --tls                        # the same over wss:// and mqtts://
    pytest tests/hil --port /dev/ttyACM0 --server ws://HOST:8000/xiaozhi/v1/

--sim starts the real server on ephemeral loopback ports with the scripted
LLM, and for each test a fresh simulated board (tools/sim.py --pty); its pty
is the DUT's port. --port is pytest-embedded's own option: a real board,
configured (tools/flash.py) for the server named by --server; the tests
that need to script the server or inject speech then skip. With neither, every test skips with the
reason. CI (CI=true) means --sim unless --port is given. --tls gives the
simulated board's server and broker a certificate from a throwaway CA
(tests/testkit/tls_ca.py) and the board that CA (docs/security.md, TLS).

pytest-embedded is loaded here, not for the whole run (pyproject disables
its entry point): its autouse fixtures then stay inside tests/hil.
"""
import os
import shutil

import pytest
from _pytest.fixtures import FixtureFunctionDefinition
from pytest_embedded import plugin as _embedded

from testkit import ROOT
from testkit.fake_llm import FakeLLM
from testkit.mosquitto import Mosquitto
from testkit.server import server_config
from testkit.server_thread import ServerThread
from testkit.sim_board import SimBoard
from testkit.tls_ca import TestCA

# The plugin's fixtures (autouse ones included) and hooks, scoped to this folder.
for _name, _obj in vars(_embedded).items():
    if isinstance(_obj, FixtureFunctionDefinition) or _name in ("pytest_configure", "pytest_unconfigure"):
        globals()[_name] = _obj

LESSON_MP3 = ROOT / "tests/firmware/data/cbr_1500ms_notag.mp3"   # a real 1.5 s MP3
LESSONS = ("lesson1.mp3", "lesson2.mp3")
SIM_DEVICE_ID = "02:00:00:00:0a:01"


def pytest_addoption(parser):
    _embedded.pytest_addoption(parser)
    g = parser.getgroup("xiaozhi-hil")
    g.addoption("--sim", action="store_true", default=False,
                help="run the HIL tests against the simulated board (default when CI=true and no --port)")
    g.addoption("--server", default=None, help="server URL a real board (--port) talks to")
    g.addoption("--tls", action="store_true", default=False,
                help="with --sim: the board talks wss:// and mqtts://, checking a throwaway CA's certificate")


class Target:
    """What the tests run against: the simulated board or a real one."""

    def __init__(self, simulated, llm=None, server=None, board=None, broker=None):
        self.simulated = simulated
        self.llm = llm          # the scripted LLM (simulated only)
        self.server = server    # ServerThread (simulated only)
        self.board = board      # SimBoard of the current test (simulated only)
        self.broker = broker    # Mosquitto the board's MQTT channel uses (simulated only)
        self.device_id = SIM_DEVICE_ID if simulated else None

    def need_sim(self, what):
        if not self.simulated:
            pytest.skip("%s needs the simulated board (--sim): a real board's mic and server are not scripted"
                        % what)


def _mode(config):
    if config.getoption("port"):
        return "port"
    if config.getoption("sim") or os.environ.get("CI") == "true":
        return "sim"
    return None


@pytest.fixture(scope="session")
def _hil_server(request, tmp_path_factory):
    if _mode(request.config) != "sim":
        yield None, None, None, None
        return
    ca = TestCA(tmp_path_factory.mktemp("ca")) if request.config.getoption("tls") else None
    broker = Mosquitto(tls=ca.good if ca else None).start()
    request.addfinalizer(broker.close)
    with FakeLLM() as llm:
        # A short opener (every test boots and hears it first) and no re-invitation
        # talking over a test that waits.
        cfg = server_config(llm.base_url, apps={"opener_lines": {"zh": ["你好呀！"], "en": ["Hi there!"]},
                                                    "max_reinvites": 0},
                            **({"tls": {"cert": ca.good[0], "key": ca.good[1]}} if ca else {}))
        with ServerThread(cfg) as srv:
            yield llm, srv, broker, ca


@pytest.fixture
def target(request, _hil_server, tmp_path):
    mode = _mode(request.config)
    if mode is None:
        pytest.skip("no board: pass --sim (simulated board) or --port /dev/ttyACM0 (a real one)")
    if mode == "port":
        yield Target(False)
        return
    llm, srv, broker, ca = _hil_server
    llm.default_reply = "🙂 Okay."
    state = tmp_path / "state"
    (state / "sd").mkdir(parents=True)
    for name in LESSONS:
        shutil.copy(LESSON_MP3, state / "sd" / name)
    mqtt = ["--mqtt", "mqtts://127.0.0.1:%d" % broker.tls_port, "--ca", ca.ca_pem] if ca else \
        ["--mqtt", "127.0.0.1:%d" % broker.port]
    board = SimBoard(state, srv.ws_url, "--device-id", SIM_DEVICE_ID, *mqtt, "--wake-on-alarm").start()
    try:
        yield Target(True, llm, srv, board, broker)
    finally:
        board.stop()
        llm.default_reply = None
        llm.clear()  # a test that failed early leaves its scripted turns behind


# ---- what pytest-embedded's DUT is built from ----

@pytest.fixture
def embedded_services():
    return "serial"


@pytest.fixture
def port(request, target):
    if target.simulated:
        return target.board.port
    return request.config.getoption("port")


@pytest.fixture
def app_path():
    return str(ROOT / "firmware")


@pytest.fixture
def console(dut, target):
    from hil_console import Console
    c = Console(dut, target)
    if not target.simulated:
        c.send("reboot")  # a real board boots afresh for each test, as the sim does
    return c
