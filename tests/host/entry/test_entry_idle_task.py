"""A server that accepts a lesson but plays nothing (one that runs its skills
after answering, or whose play never reached the player): the board must
not keep the parents' priority for a task whose player is idle, so the
child's wake word opens a conversation instead of being refused as busy.
Real firmware process, scripted server over a real WebSocket."""
import pytest

from entry_rig import LESSONS, write_record
from testkit.firmware_process import FirmwareProcess, prepare_state
from testkit.control_api import eventually
from testkit.wire_server import WireServer
from xiaozhi_server import protocol as proto

pytestmark = pytest.mark.timeout(60)


def start_task_request(conn):
    for _t, m in conn.received:
        p = m.get("payload") or {}
        if m.get("type") == "mcp" and p.get("method") == proto.METHOD_APP_START_TASK:
            return p
    return None


async def test_a_play_audio_task_with_an_idle_player_does_not_refuse_the_wake_word(tmp_path):
    async with WireServer() as srv:
        state = prepare_state(tmp_path / "state", {"server_url": srv.ws_url, "ota_url": "",
                                                   "clock_speed": 1}, LESSONS)
        # A parents' command cached before a power cut: the boot runs it first.
        write_record(state, "mqtt_cmd", {"req_id": "r1", "app_id": "english_learning", "task_id": "repeater",
                                         "params": {"name": "lesson1.mp3"}})
        fw = await FirmwareProcess.start("cpython", state)
        try:
            conn = await srv.next_connection()
            req = await eventually(lambda: start_task_request(conn), 15)
            assert req["params"]["source"] == proto.SOURCE_MQTT_IMMEDIATE
            await conn.send_json(proto.mcp(proto.rpc_result(req["id"], proto.app_start_task_result(
                True, "english_learning", proto.MODE_PLAY_AUDIO, active_task_id="repeater")), conn.session_id))
            await fw.wait_event("task", app_id="english_learning", outcome=proto.ACK_ACCEPTED)
            assert not fw.find("player", state="playing")
            await fw.send("wake")
            await conn.wait_json("listen", state=proto.LISTEN_DETECT)
            assert not fw.find("task", outcome=proto.ACK_REFUSED), fw.find("task")
        finally:
            await fw.stop()
