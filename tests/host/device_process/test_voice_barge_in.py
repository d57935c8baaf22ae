"""Voice barge-in on the simulated board (the assumed Sening wiring has
the ES7210's playback reference, so the board's speech engine keeps
listening while the device speaks, docs/hardware.md): a wake word said
during a reply aborts it (`abort`, reason wake_word_detected, as stock
xiaozhi devices send it) and starts a new turn (`listen detect` with the
wake word, then `listen start`); what the server still sends of the
aborted reply is not played. On a board without a reference the engine
does not hear the wake word while the device speaks (the listening rule,
tests/host/cmodule/test_audio_modes.py), so only the button interrupts."""
import asyncio

import pytest

from testkit.wire_server import WireServer
from xiaozhi_server import protocol as proto

from test_device_wire import _connected, opus_reply

pytestmark = pytest.mark.timeout(60)


async def test_a_wake_word_during_a_reply_aborts_it_and_starts_a_new_turn(launch):
    frames = opus_reply(10)
    async with WireServer() as srv:
        fw = await launch(srv, speed=1)
        conn = await _connected(srv, fw)
        sid = conn.session_id
        await conn.send_json(proto.tts("start", session_id=sid))
        await conn.send_json(proto.tts("sentence_start", session_id=sid, text="Once upon a time..."))
        for f in frames[:5]:
            await conn.send_audio(f)
        await fw.wait_event("state", state="speaking")
        mark = conn.received[-1][0]
        fw_mark = fw.mark()
        await fw.send("wake")
        await conn.wait_json("abort", since=mark, reason="wake_word_detected")
        detect = await conn.wait_json("listen", since=mark, state="detect")
        assert detect["text"] == "你好小智"
        await conn.wait_json("listen", since=mark, state="start")
        await fw.wait_event("state", since=fw_mark, state="listening")
        # The rest of the aborted reply arrives before the server's tts stop: not played.
        for f in frames[5:]:
            await conn.send_audio(f)
        await conn.send_json(proto.tts("stop", session_id=sid))
        await asyncio.sleep(0.5)
        played = sorted((fw.state_dir / "speaker").glob("reply_*/*"))
        assert len(played) <= 5, "frames after the abort were played: %d" % len(played)
        # The new turn goes on: the device is still listening, not speaking.
        assert fw.find("state", since=fw_mark)[-1]["state"] == "listening"
        await fw.stop()
