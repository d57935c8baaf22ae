"""The seed acceptance suite's server: as a family runs it (two worker
processes, its own mosquitto with device credentials and ACL, the control
store on SQLite and again on PostgreSQL, the conversation kept between
connections), with the scripted model. Every port is a free one, so the
suite runs beside others (pytest-xdist)."""
import asyncio
import contextlib

import aiohttp
import pytest

from testkit.control_api import control_config
from testkit.fake_llm import FakeLLM

from seed_rig import OPENER, REPLY, SeedRig


@pytest.fixture
async def start_seed(tmp_path, control_db):
    """start_seed(workers=2, **sections) -> a SeedRig; all stopped after the test."""
    async with contextlib.AsyncExitStack() as stack:
        async def start(workers=2, **sections):
            llm = stack.enter_context(FakeLLM())
            llm.default_reply = REPLY
            target = control_db("control.db")
            kw = {"db_url": target} if target.startswith("postgresql://") else {}
            cfg = control_config(tmp_path / "control.db", **kw, **sections)
            cfg["llm"] = {"type": "openai", "base_url": llm.base_url, "api_key": "test", "model": "fake-model"}
            cfg["apps"]["opener_lines"] = {"zh": [OPENER], "en": [OPENER]}
            cfg["apps"]["max_reinvites"] = 0
            cfg["server"]["workers"] = workers
            cfg["conversation"]["keep_by_default"] = True
            http = aiohttp.ClientSession()
            stack.push_async_callback(http.close)
            rig = SeedRig(cfg, http, tmp_path, llm)
            stack.push_async_callback(rig.stop_server)
            await rig.start_server()
            stack.push_async_callback(rig.close)
            return rig

        yield start
    await asyncio.sleep(0.01)
