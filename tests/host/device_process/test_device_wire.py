"""The firmware app as a real process (MicroPython unix port with a 256 KB
heap, and CPython) on the simulated board, against a scripted server that
speaks the wire protocol over a real WebSocket."""
import asyncio
import json

import opuslib
import pytest

from testkit.wire_server import WireServer
from xiaozhi_server import protocol as proto

pytestmark = pytest.mark.timeout(60)

PLAY = "self.mp3.play"


def tool_value(reply):
    assert "result" in reply, reply
    assert reply["result"]["isError"] is False
    return json.loads(reply["result"]["content"][0]["text"])


def opus_reply(n=5):
    """n real 60 ms Opus frames at 24 kHz (a short tone)."""
    import math
    enc = opuslib.Encoder(24000, 1, opuslib.APPLICATION_AUDIO)
    frames = []
    for i in range(n):
        pcm = b"".join(int(8000 * math.sin(2 * math.pi * 440 * (i * 1440 + k) / 24000)).to_bytes(
            2, "little", signed=True) for k in range(1440))
        frames.append(enc.encode(pcm, 1440))
    return frames


async def _connected(srv, fw):
    conn = await srv.next_connection()
    await asyncio.wait_for(conn.mcp_ready, 10)
    await conn.wait_json("listen", state="start")
    return conn


async def test_paged_tools_then_two_passes_then_standby(launch, interp):
    async with WireServer() as srv:
        fw = await launch(srv, speed=4)
        conn = await _connected(srv, fw)
        # OTA first, with the device's identity; its token is used for the socket.
        ota_headers, info = srv.ota_calls[0]
        assert ota_headers["Device-Id"] == conn.headers["Device-Id"]
        assert info["application"]["version"]
        assert conn.headers["Authorization"] == "Bearer test-token"
        assert conn.headers["Protocol-Version"] == "1"
        assert conn.headers["Client-Id"]
        assert conn.hello["features"]["mcp"] is True
        # 700-byte pages: three pages, each cursor the first tool of its page.
        assert [c for c, _ in conn.pages] == [None, "self.mp3.play", "self.mp3.get_list"]
        assert conn.tools == list(proto.DEVICE_TOOL_NAMES)
        for _, page in conn.pages:
            assert proto.validate("jsonrpc.tools_list_result", page["result"]) is None

        reply = await conn.call_tool(PLAY, {"name": "lesson1.mp3", "repeat": 2, "power_off_after": True})
        assert tool_value(reply) == {"accepted": True, "status": "playing"}
        assert await fw.wait_exit(20) == 0
        ends = fw.find("player", state="pass_end")
        assert [e["pass"] for e in ends] == [1, 2]
        assert fw.find("standby", cause="repeat_done")
        record = json.loads((fw.state_dir / "power.json").read_text())
        assert record["event"] == "standby" and record["cause"] == "repeat_done"
        await conn.wait_json("goodbye")


async def test_stop_during_first_pass_cancels_rest_and_power_off(launch):
    async with WireServer() as srv:
        fw = await launch(srv, speed=1)
        conn = await _connected(srv, fw)
        await conn.call_tool(PLAY, {"name": "lesson1.mp3", "repeat": 2, "power_off_after": True})
        await fw.wait_event("player", state="playing")
        assert tool_value(await conn.call_tool("self.mp3.stop", {})) == {"stopped": True}
        await fw.wait_event("player", state="stopped")
        await asyncio.sleep(2.0)  # longer than a whole pass
        assert fw.find("player", state="pass_end") == []
        status = tool_value(await conn.call_tool("self.mp3.get_status", {}))
        assert status["state"] == "idle" and status["repeat_left"] == 0
        assert fw.proc.returncode is None and not (fw.state_dir / "power.json").exists()
        await fw.stop()


async def test_tts_reply_pauses_and_resumes_only_the_current_pass(launch):
    frames = opus_reply(5)
    async with WireServer() as srv:
        fw = await launch(srv, speed=1)
        conn = await _connected(srv, fw)
        await conn.call_tool(PLAY, {"name": "lesson1.mp3", "repeat": 2, "power_off_after": True})
        await fw.wait_event("player", state="playing")
        await asyncio.sleep(0.3)
        sid = conn.session_id
        await conn.send_json(proto.tts("start", session_id=sid))
        await conn.send_json(proto.tts("sentence_start", session_id=sid, text="Good job!"))
        for f in frames:
            await conn.send_audio(f)
        await fw.wait_event("player", state="paused")
        status = tool_value(await conn.call_tool("self.mp3.get_status", {}))
        assert status == {"state": "paused", "name": "lesson1.mp3", "repeat_left": 1,
                          "power_off_after": False}
        await conn.send_json(proto.tts("stop", session_id=sid))
        await fw.wait_event("player", state="resumed")
        # The device listens again only after the reply has been played out.
        await conn.wait_json("listen", state="start", since=conn.received[-1][0])
        assert fw.find("subtitle", role="assistant", text="Good job!")
        await fw.wait_event("player", state="done", timeout=10)
        await asyncio.sleep(0.5)
        ends = fw.find("player", state="pass_end")
        assert [e["pass"] for e in ends] == [1]
        assert fw.proc.returncode is None and not (fw.state_dir / "power.json").exists()
        saved = sorted((fw.state_dir / "speaker" / "reply_0001").iterdir())
        assert [p.read_bytes() for p in saved] == frames
        await fw.stop()


@pytest.mark.parametrize("args, words", [
    ({"name": "../boot.py"}, "file name"),
    ({"name": "/sd/lesson1.mp3"}, "file name"),
    ({"name": "missing.mp3"}, "no MP3 named"),
    ({"name": "notes.txt"}, "no MP3 named"),
    ({"name": "lesson1.mp3", "repeat": 0}, "repeat"),
    ({"name": "lesson1.mp3", "repeat": "3"}, "repeat"),
    ({"name": "lesson1.mp3", "repeat": 2.5}, "repeat"),
])
async def test_bad_play_arguments_are_rpc_errors(launch, args, words):
    async with WireServer() as srv:
        fw = await launch(srv, speed=4)
        conn = await _connected(srv, fw)
        reply = await conn.call_tool(PLAY, args)
        assert reply["error"]["code"] == proto.RPC_INVALID_PARAMS, reply
        assert words in reply["error"]["message"]
        status = tool_value(await conn.call_tool("self.mp3.get_status", {}))
        assert status["state"] == "idle"
        listed = tool_value(await conn.call_tool("self.mp3.get_list", {}))
        assert [f["name"] for f in listed["files"]] == ["lesson1.mp3"]
        assert fw.find("player") == []
        await fw.stop()
