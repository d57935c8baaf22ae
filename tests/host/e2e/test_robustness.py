"""Bad input gets a clear refusal or is ignored with a log line, and the
server keeps serving everyone else."""
import asyncio
import logging

import pytest
import websockets

from testkit import audio
from testkit.server import server_config
from testkit.wire_device import WireDevice


async def still_serves(server, fake_llm):
    fake_llm.reply("🙂 Still here.")
    async with WireDevice(server.ws.url, device_id="aa:bb:cc:00:00:99", mcp=False) as other:
        await other.hello()
        await other.detect("are you there")
        await other.wait_json("tts", state="stop", timeout=20)
        assert "Still here." in other.texts()


async def test_garbage_messages_are_ignored_and_logged(fake_llm, start_server, caplog):
    server = await start_server(server_config(fake_llm.base_url))
    caplog.set_level(logging.INFO)
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.ws.send(b"\x00\x01binary before hello")
        await dev.hello()
        for bad in ('{"type": "listen", "state": ', "not json at all", "[1, 2, 3]",
                    '{"type": "teleport", "where": "moon"}', '{"type": "listen", "state": "jump"}',
                    '{"type": "abort", "reason": 12}'):
            await dev.ws.send(bad)
        await dev.ws.send(b"\xff" * 10)  # not an Opus packet the listener can use
        fake_llm.reply("🙂 I am fine.")
        await dev.detect("how are you")
        await dev.wait_json("tts", state="stop", timeout=20)
        assert "I am fine." in dev.texts()
    logs = caplog.text
    assert "binary frame before hello ignored" in logs
    assert "not valid JSON" in logs and "unknown message type" in logs
    assert "listen.state" in logs and "abort.reason" in logs


async def test_one_megabyte_frame_is_refused_with_1009(fake_llm, start_server):
    server = await start_server(server_config(fake_llm.base_url))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.ws.send('{"type":"listen","state":"detect","text":"' + "a" * (1 << 20) + '"}')
        code, _reason = await dev.wait_closed()
        assert code == 1009
    await still_serves(server, fake_llm)


async def test_silent_device_is_closed_after_the_hello_timeout(fake_llm, start_server):
    cfg = server_config(fake_llm.base_url, session={"hello_timeout_s": 0.5})
    server = await start_server(cfg)
    async with WireDevice(server.ws.url, mcp=False) as dev:
        code, reason = await dev.wait_closed(timeout=5)
        assert code == 4000 and reason == "no hello"


@pytest.mark.parametrize("token,device,why", [
    (None, "aa:bb:cc:00:00:01", "a token is required"),
    ("wrong", "aa:bb:cc:00:00:01", "missing or wrong token"),
    ("s3cret", "de:ad:be:ef:00:00", "is not allowed"),
])
async def test_refused_devices_get_1008_and_a_reason(fake_llm, start_server, caplog, token, device, why):
    cfg = server_config(fake_llm.base_url, auth={"tokens": ["s3cret"], "allowed_devices": ["aa:bb:cc:00:00:01"]})
    server = await start_server(cfg)
    caplog.set_level(logging.INFO)
    dev = WireDevice(server.ws.url, device_id=device, token=token, mcp=False)
    await dev.connect()
    code, reason = await dev.wait_closed(timeout=5)
    assert code == 1008 and why in reason
    assert why in caplog.text
    ok = WireDevice(server.ws.url, device_id="aa:bb:cc:00:00:01", token="s3cret", mcp=False)
    await ok.connect()
    await ok.hello()
    await ok.close()


async def test_token_in_query_string_is_accepted(fake_llm, start_server):
    cfg = server_config(fake_llm.base_url, auth={"tokens": ["s3cret"]})
    server = await start_server(cfg)
    url = server.ws.url + "?device-id=aa:bb&client-id=c1&authorization=Bearer%20s3cret"
    async with websockets.connect(url) as ws:
        await ws.send('{"type":"hello","version":1,"transport":"websocket","audio_params":'
                      '{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}')
        reply = await asyncio.wait_for(ws.recv(), 5)
        assert '"session_id"' in reply


async def test_wrong_path_is_404(fake_llm, start_server):
    server = await start_server(server_config(fake_llm.base_url))
    with pytest.raises(websockets.InvalidStatus) as e:
        await websockets.connect("ws://127.0.0.1:%d/other/" % server.ws.port)
    assert e.value.response.status_code == 404


@pytest.mark.parametrize("version", [2, 3])
async def test_binary_protocol_versions_2_and_3(fake_llm, start_server, version):
    fake_llm.reply("🙂 Yes, I can hear you.")
    server = await start_server(server_config(fake_llm.base_url))
    async with WireDevice(server.ws.url, version=version, mcp=False) as dev:
        await dev.hello()
        await dev.listen_start()
        await dev.say_pcm(await audio.english_speech("Can you hear me?"), pace=0.02)
        stt = await dev.wait_json("stt", timeout=30)
        assert "hear" in stt["text"].lower()
        await dev.wait_json("tts", state="stop", timeout=30)
        assert dev.audio, "downstream frames arrive in v%d framing" % version
