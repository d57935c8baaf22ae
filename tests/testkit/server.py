"""A real server on loopback (ephemeral ports) for end-to-end tests, with the
shared fake OpenAI-compatible LLM as its model.

Test folders expose the fixtures with `from testkit.server import fake_llm, start_server`
in their conftest.py."""
import pytest

from testkit.fake_llm import FakeLLM
from xiaozhi_server import config as configmod
from xiaozhi_server.server import XiaozhiServer


def server_config(llm_url=None, **sections):
    # The start-up check, so a test's typo fails it instead of testing the default.
    configmod.refuse_unknown(sections, "server_config")
    cfg = configmod.merge(configmod.DEFAULTS, sections)
    cfg["server"].update(host="127.0.0.1", ws_port=0, http_port=0)
    cfg["llm"] = ({"type": "openai", "base_url": llm_url, "api_key": "test", "model": "fake-model"}
                  if llm_url else {"type": "none"})
    return cfg


@pytest.fixture
def fake_llm():
    with FakeLLM() as llm:
        yield llm


@pytest.fixture
async def start_server():
    started = []

    async def start(cfg, **kw):
        kw.setdefault("with_broker", False)
        kw.setdefault("with_mcp", False)
        server = XiaozhiServer(cfg, **kw)
        await server.start()
        started.append(server)
        return server

    yield start
    for s in started:
        await s.stop()
