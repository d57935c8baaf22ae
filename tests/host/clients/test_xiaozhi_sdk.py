"""xiaozhi-sdk 0.5.1 from PyPI, unchanged, against the server as `make run`
starts it (control plane and its broker, no tokens on loopback):
its own OTA check (it reads websocket.token unconditionally, and crashed
with KeyError while the server left the key out), its own WebSocket
hello and a typed question answered in text and Opus audio; the parent
then finds it in the device list, voice only."""
import asyncio

import aiohttp
from xiaozhi_sdk import XiaoZhiWebsocket
from xiaozhi_sdk.ota import OtaDevice

from testkit.control_api import Api, control_config, eventually
from testkit.node import start_node

MAC = "02:5d:4b:00:00:33"


async def test_xiaozhi_sdk_checks_ota_connects_and_is_answered(tmp_path, fake_llm):
    cfg = control_config(tmp_path / "control.db")
    cfg["llm"] = {"type": "openai", "base_url": fake_llm.base_url, "api_key": "test", "model": "fake-model"}
    server = await start_node(cfg, with_broker=True)
    heard = []

    async def on_message(msg):
        heard.append(msg)
    client = XiaoZhiWebsocket(on_message, ota_url=server.http.ota_url)
    try:
        info = await OtaDevice(MAC, "sdk-client", server.http.ota_url).activate_device()
        assert isinstance(info["websocket"]["token"], str) and info["websocket"]["url"] == server.ws.url

        fake_llm.reply("大象是陆地上最大的动物。")
        assert await client.init_connection(MAC) is True      # its OTA check, then its hello
        assert client.session_id
        await client.send_text("大象有多大？")

        def said():
            return any(m.get("type") == "tts" and m.get("state") == "sentence_start"
                       and "大象" in (m.get("text") or "") for m in heard)
        await eventually(said, timeout=30)
        await eventually(lambda: len(client.output_audio_queue) > 0, timeout=30)   # Opus it decoded
        assert any(m.get("type") == "stt" and m.get("text") == "大象有多大？" for m in heard)

        async with aiohttp.ClientSession() as http:
            rows = {d["device_id"]: d for d in (await Api(server, http).get("/api/devices"))[1]["devices"]}
        assert rows[MAC]["online"] and rows[MAC]["control"] == "voice_only"
    finally:
        await client.close()
        await asyncio.sleep(0)
        await server.stop()
