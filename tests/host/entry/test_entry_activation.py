"""The stock activation flow on the simulated board, with device tokens
configured: a board nobody provisioned asks the OTA endpoint, gets a code
and nothing secret, says the code and asks `activate` until a parent
approves it; then its next OTA answer carries its own WebSocket token and
broker login, and it chats and takes the parents' commands. The next boot
needs no code."""
import re

import aiohttp
import pytest

from testkit.control_api import Api, control_config, eventually
from testkit.fake_llm import FakeLLM
from entry_rig import DEVICE_ID, OPENER, Rig
from xiaozhi_server.server import XiaozhiServer

pytestmark = pytest.mark.timeout(120)
CODE = re.compile(r"activation code (\d{6})")


@pytest.fixture
async def locked_rig(tmp_path):
    with FakeLLM() as llm:
        llm.default_reply = "好的。"
        cfg = control_config(tmp_path / "control.db", auth={"tokens": ["only-for-old-devices"]})
        cfg["llm"] = {"type": "openai", "base_url": llm.base_url, "api_key": "test", "model": "fake-model"}
        cfg["apps"]["opener_lines"] = {"zh": [OPENER], "en": [OPENER]}
        server = XiaozhiServer(cfg, with_broker=True, with_mcp=False)
        await server.start()
        http = aiohttp.ClientSession()
        r = Rig(server, Api(server, http), tmp_path / "state")
        try:
            yield r
        finally:
            await r.close()
            await http.close()
            await server.stop()


async def test_a_board_waits_for_a_parent_then_gets_its_credentials(locked_rig):
    rig = locked_rig
    fw = await rig.boot("cpython", provision=False)
    code = (await eventually(lambda: next((m.group(1) for m in map(CODE.search, fw.lines) if m), None), 20))
    assert rig.session() is None, "no voice session before the code is approved"
    status, body = await rig.api.post("/api/activations/%s" % code, None)
    assert status == 200 and body["device_id"] == DEVICE_ID

    await rig.chatting(fw, timeout=30)          # WebSocket with its own token, MQTT with its login
    status, ack = await rig.start_task({"app_id": "english_translation"})
    assert status == 200 and ack["ack"]["ok"] is True
    await fw.stop()

    fw = await rig.boot("cpython")
    await rig.chatting(fw)
    assert not any(CODE.search(line) for line in fw.lines), "activated once is enough"
    await fw.stop()
