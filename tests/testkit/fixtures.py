"""The pytest fixtures every test folder shares, exported once: the root
conftest (tests/conftest.py) loads this module as a plugin, so no folder's
conftest imports and re-exports them (a session-scoped fixture re-exported
by several conftests is one fixture per conftest: one PostgreSQL cluster
each).

- fake_llm: the scripted OpenAI-compatible model (testkit/fake_llm.py);
- start_server: start_server(cfg, **kw) -> a started node
  (testkit/node.py: workers=, role=, with_broker=, ...), stopped after the test;
- postgres_cluster, store_backend, server_db, control_db: where a test's
  control store lives (testkit/postgres.py).
"""
import pytest

from testkit.fake_llm import FakeLLM
from testkit.node import start_node
from testkit.postgres import control_db, postgres_cluster, server_db, store_backend  # noqa: F401 (fixtures)


@pytest.fixture
def fake_llm():
    with FakeLLM() as llm:
        yield llm


@pytest.fixture
async def start_server():
    started = []

    async def start(cfg, **kw):
        server = await start_node(cfg, **kw)
        started.append(server)
        return server

    yield start
    for s in started:
        await s.stop()
