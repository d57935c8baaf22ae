"""Recovery to idle and a fresh connection on the next wake word, with the
firmware as a real process against a scripted wire-protocol server."""
import asyncio

import pytest

from testkit.wire_server import WireServer
from xiaozhi_server import protocol as proto
from test_device_wire import opus_reply, tool_value

pytestmark = pytest.mark.timeout(60)


async def _connected(srv):
    conn = await srv.next_connection()
    await asyncio.wait_for(conn.mcp_ready, 10)
    await conn.wait_json("listen", state="start")
    return conn


async def _wake_reconnects(srv, fw):
    since = fw.mark()
    await fw.send("wake 你好小智")
    conn = await _connected(srv)
    await conn.wait_json("listen", state="detect", text="你好小智")
    await fw.wait_event("state", state="listening", since=since)
    return conn


async def test_garbage_frame_drops_to_idle_and_wake_reconnects(launch):
    async with WireServer() as srv:
        fw = await launch(srv, speed=4)
        conn = await _connected(srv)
        since = fw.mark()
        await conn.send_json({"type": "tts", "state": "bogus"})   # invalid text: ignored
        await conn.send_garbage_frame()                           # broken framing: fatal
        await fw.wait_event("state", state="idle", since=since)
        await asyncio.wait_for(conn.closed.wait(), 5)
        again = await _wake_reconnects(srv, fw)
        assert again is not conn and len(srv.connections) == 2
        await fw.stop()


async def test_server_closing_mid_tts_drops_to_idle_and_wake_reconnects(launch):
    async with WireServer() as srv:
        fw = await launch(srv, speed=4)
        conn = await _connected(srv)
        await conn.send_json(proto.tts("start", session_id=conn.session_id))
        for f in opus_reply(3):
            await conn.send_audio(f)
        await fw.wait_event("state", state="speaking")
        since = fw.mark()
        await conn.close(1001, "going away")
        await fw.wait_event("state", state="idle", since=since)
        await _wake_reconnects(srv, fw)
        await fw.stop()


async def test_server_that_never_answers_hello_gives_idle_then_wake_reconnects(launch):
    # The board clock runs at real speed, so the reconnect below has the
    # whole 10 s hello budget however busy the machine is; the first hello
    # wait is ended by warping the board clock past it, not by racing it.
    async with WireServer(answer_hello=False) as srv:
        fw = await launch(srv, speed=1)
        first = await srv.next_attempt()
        await first.wait_json("hello", timeout=15)
        assert not fw.find("error", message="cannot reach the server")   # still waiting for us
        since = fw.mark()
        await fw.send("warp %d" % (proto.HELLO_TIMEOUT_MS // 1000 + 1))
        await fw.wait_event("error", message="cannot reach the server", since=since)
        await fw.wait_event("state", state="idle", since=since)
        await asyncio.wait_for(first.closed.wait(), 15)       # the device hung up
        srv.answer_hello = True
        conn = await _wake_reconnects(srv, fw)
        assert conn.tools == list(proto.DEVICE_TOOL_NAMES)
        await fw.stop()


async def test_wake_word_carries_its_level_and_a_servers_goodbye_sends_the_board_to_idle(launch):
    """Another device of the household answers: the server says goodbye and
    closes; the board goes idle without playing anything (docs/server.md)."""
    async with WireServer() as srv:
        fw = await launch(srv, speed=4)
        conn = await _connected(srv)
        since = fw.mark()
        await fw.send("wake 你好小智 @-18.5")
        detect = await conn.wait_json("listen", state="detect", text="你好小智")
        assert detect["level"] == -18.5 and "score" not in detect
        at = next(t for t, m in conn.received if m is detect)
        await conn.wait_json("listen", state="start", since=at)     # listening again after the wake
        await conn.send_json(proto.goodbye(session_id=conn.session_id, reason="another_device_answered"))
        await conn.close()
        await fw.wait_event("state", state="idle", since=since)
        assert not fw.find("state", state="speaking", since=since)
        await fw.stop()


@pytest.mark.timeout(180)
async def test_a_lesson_playing_board_reconnects_each_time_its_server_is_killed(launch):
    """The board plays an SD lesson when its server is killed -9, three
    times: each time it fails to connect while nothing listens, asks OTA
    again, and reconnects to the server OTA names, the lesson playing on
    throughout (on the 256 KB heap a new connection must still find its
    buffers however long the lesson has played)."""
    async with WireServer() as srv:
        fw = await launch(srv, speed=1, reconnect={"attempts": 100, "first_ms": 300, "max_ms": 1000})
        conn = await _connected(srv)
        reply = await conn.call_tool("self.mp3.play", {"name": "lesson1.mp3", "repeat": 100})
        assert tool_value(reply) == {"accepted": True, "status": "playing"}
        await fw.wait_event("player", state="playing")
        for _ in range(3):
            since = fw.mark()
            await srv.kill()
            await fw.wait_event("channel", state="closed", since=since)
            # Nothing listens: the board fails, asks OTA (which still names
            # the dead port) and keeps trying; twice, so a failed connect is
            # seen to leave the board able to connect again.
            failed = since
            for _ in range(2):
                await fw.wait_event("error", message="cannot reach the server", since=failed)
                failed = fw.mark()
            await srv.revive()
            conn = await srv.next_connection()
            await asyncio.wait_for(conn.mcp_ready, 10)
            await fw.wait_event("channel", state="open", since=since)
            assert fw.find("player", state="playing") and not fw.find("player", state="stopped")
        status = tool_value(await conn.call_tool("self.mp3.get_status", {}))
        assert status["state"] == "playing" and status["name"] == "lesson1.mp3", status
        assert not fw.find("player", state="done")
        await fw.stop()
