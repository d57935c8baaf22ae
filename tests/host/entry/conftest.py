"""The entry channels end to end: the real server with its control plane
(parents' API) and its own mosquitto (credentials and ACL checked), the
scripted OpenAI-compatible model, and the firmware as a real process on the
simulated board (CPython and the MicroPython unix port with its 256 KB heap)."""
import asyncio
import contextlib

import aiohttp
import pytest

from testkit.control_api import Api, control_config
from testkit.fake_llm import FakeLLM
from testkit.node import node

from entry_rig import OPENER, Rig


@pytest.fixture
async def start_rig(tmp_path):
    """start_rig(**sections) -> a Rig on a server with these config sections
    (e.g. auth={"tokens": [...]}); everything stopped after the test."""
    async with contextlib.AsyncExitStack() as stack:
        async def start(**sections):
            llm = stack.enter_context(FakeLLM())
            llm.default_reply = "好的。"
            cfg = control_config(tmp_path / "control.db", **sections)
            cfg["llm"] = {"type": "openai", "base_url": llm.base_url, "api_key": "test", "model": "fake-model"}
            cfg["apps"]["opener_lines"] = {"zh": [OPENER], "en": [OPENER]}
            server = await stack.enter_async_context(node(cfg, with_broker=True))
            http = aiohttp.ClientSession()
            stack.push_async_callback(http.close)
            r = Rig(server, Api(server, http), tmp_path / "state")
            stack.push_async_callback(r.close)
            return r

        yield start
    await asyncio.sleep(0.01)


@pytest.fixture
async def rig(start_rig):
    return await start_rig()
