"""One connection's flood cannot starve another session (issue 12, item 9):
its frames over the rate are dropped before the session sees them, it is
closed with 1008 when it keeps on, and the log gets a few lines, not one
per frame. `make bench ARGS=edge` prints the other session's latency."""
import asyncio
import logging
import time

from testkit.control_api import eventually
from testkit.wire_device import WireDevice, opus_frames
from xiaozhi_server import protocol as proto
from xiaozhi_server.logthrottle import DEVICE_LOG_BURST

from edge_clients import edge_config

FLOODER = "aa:bb:cc:00:00:66"


async def flood(dev, frame, sent):
    """Send `frame` as fast as the connection takes it, until the server closes it."""
    try:
        while True:
            for _ in range(50):
                await dev.ws.send(frame)
                sent[0] += 1
            await asyncio.sleep(0)
    except Exception:       # the server closed the connection
        return


async def run_flood(server, fake_llm, frame):
    """(frames sent, close code, close reason, seconds the flood lasted)."""
    sent = [0]
    async with WireDevice(server.ws.url, device_id=FLOODER, mcp=False) as flooder, \
            WireDevice(server.ws.url, device_id="aa:bb:cc:00:00:67", mcp=False) as other:
        await flooder.hello()
        await other.hello()
        await other.wait_for(lambda: other.find("tts", state="stop"), timeout=60)   # the opener
        began = time.monotonic()
        flooding = asyncio.create_task(flood(flooder, frame, sent))
        stats = server.ws.rate_stats
        await eventually(lambda: stats.dropped_text + stats.dropped_binary > 0, timeout=60)
        fake_llm.reply("🙂 I am still here for you.")
        since = time.monotonic()
        await other.detect("are you there")
        await other.wait_json("tts", state="stop", timeout=60, since=since)
        assert "I am still here for you." in other.texts()
        code, reason = await flooder.wait_closed(timeout=120)
        await flooding
    return sent[0], code, reason, time.monotonic() - began


def log_windows(server, lasted):
    """How many log windows a flood of `lasted` seconds opens: each template of
    one device gets DEVICE_LOG_BURST lines per window (logthrottle.py), and a
    busy machine stretches the flood past one window."""
    return int(lasted // float(server.config["limits"]["log_interval_s"])) + 1


async def test_an_abort_flood_is_dropped_and_closed_while_another_session_is_served(fake_llm, start_server, caplog):
    caplog.set_level(logging.INFO)
    server = await start_server(edge_config(fake_llm.base_url, ws_flood_close_s=3))
    sent, code, reason, lasted = await run_flood(server, fake_llm, proto.encode(proto.abort(reason="flood")))
    assert code == 1008 and "too many messages" in reason
    stats = server.ws.rate_stats
    assert stats.flood_closed == 1 and stats.dropped_text > 0 and stats.dropped_binary == 0
    # What reached the session: the burst and the rate, not the flood.
    aborts = sum(1 for r in caplog.records if FLOODER in r.getMessage() and "abort (flood)" in r.getMessage())
    # Read and dropped, or left unread in the socket while the reading pauses.
    assert sent >= 500 and stats.dropped_text > 10 * stats.passed_text
    flooder_lines = [r for r in caplog.records if FLOODER in r.getMessage()]
    windows = log_windows(server, lasted)
    assert aborts <= DEVICE_LOG_BURST * windows, (aborts, windows)
    assert len(flooder_lines) <= 2 * DEVICE_LOG_BURST * windows, (len(flooder_lines), windows)


async def test_an_audio_flood_is_dropped_and_closed_while_another_session_is_served(fake_llm, start_server):
    server = await start_server(edge_config(fake_llm.base_url, ws_flood_close_s=3))
    junk_audio = b"\xf8\xff\xfe" + bytes(40)        # an Opus-sized frame, sent far faster than 17/s
    _sent, code, reason, _lasted = await run_flood(server, fake_llm, junk_audio)
    assert code == 1008 and "too many messages" in reason
    stats = server.ws.rate_stats
    assert stats.flood_closed == 1 and stats.dropped_binary > 0


async def test_a_device_streaming_audio_faster_than_real_time_is_never_limited(fake_llm, start_server):
    server = await start_server(edge_config(fake_llm.base_url))
    silence = opus_frames(bytes(2 * 960))[0]
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start()
        for _ in range(150):      # 9 s of 60 ms frames at twice real time
            await dev.send_audio(silence)
            await asyncio.sleep(0.03)
        fake_llm.reply("🙂 Hi.")
        since = time.monotonic()
        await dev.detect("can you hear me")
        await dev.wait_json("tts", state="stop", timeout=60, since=since)
        assert "Hi." in dev.texts(since=since)
    assert server.ws.rate_stats.dropped_binary == 0 and server.ws.rate_stats.flood_closed == 0
