"""The stock activation flow on the simulated board, with device tokens
configured: a board nobody provisioned asks the OTA endpoint, gets a code
and nothing secret, says the code and asks `activate` until a parent
approves it; then its next OTA answer carries its own WebSocket token and
broker login, and it chats and takes the parents' commands. The next boot
needs no code."""
import re

import pytest

from testkit.control_api import eventually
from entry_rig import DEVICE_ID

pytestmark = pytest.mark.timeout(120)
CODE = re.compile(r"activation code (\d{6})")


async def test_a_board_waits_for_a_parent_then_gets_its_credentials(start_rig):
    rig = await start_rig(auth={"tokens": ["only-for-old-devices"]})
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
