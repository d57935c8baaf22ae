"""MCP initialize carries capabilities.vision {url, token} as stock servers
send it: xiaozhi-sdk reads both without a default and answers nothing
otherwise, which cost the session every device tool. Camera tools reach the
model only when a vision endpoint is configured."""
from testkit.server import server_config

from outside import QUIET, OutsideClient

VISION = {"explain_url": "http://192.0.2.10:8003/mcp/vision/explain", "token": "vision-token"}


async def _tools_offered(client, text):
    """The names the model is offered on the client's next typed turn."""
    await client.wait_for(lambda: any(p["method"] == "tools/list" for p in client.mcp_requests), timeout=10)
    await client.send("text", TEXT=text)
    await client.wait_json("tts", state="stop", timeout=30)


async def test_sdk_keeps_its_tools_and_gets_no_camera_without_a_vision_endpoint(fake_llm, start_server):
    fake_llm.reply("🙂 The volume is fifty.")
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET))
    async with OutsideClient(server.ws.url, "xiaozhi_sdk") as sdk:
        await sdk.hello()
        await _tools_offered(sdk, "how loud are you")
        assert sdk.failures == [], "the SDK would have crashed on initialize"
        assert sdk.initialize_params()["capabilities"]["vision"] == {"url": "", "token": ""}
    offered = fake_llm.requests[0].tools
    assert "set_volume" in offered and "get_device_status" in offered
    assert "take_photo" not in offered, "a camera tool without a vision endpoint can only fail"


async def test_camera_tools_are_offered_with_a_vision_endpoint(fake_llm, start_server):
    fake_llm.default_reply = "🙂 Let me look."
    server = await start_server(server_config(fake_llm.base_url, apps=QUIET, vision=VISION))
    async with OutsideClient(server.ws.url, "xiaozhi_sdk") as sdk:
        await sdk.hello()
        await _tools_offered(sdk, "what do you see")
        assert sdk.initialize_params()["capabilities"]["vision"] == {"url": VISION["explain_url"],
                                                                     "token": VISION["token"]}
    async with OutsideClient(server.ws.url, "browser_page") as page:
        await page.hello()
        await _tools_offered(page, "what do you see")
    assert "take_photo" in fake_llm.requests[0].tools
    assert "self_camera_take_photo" in fake_llm.requests[1].tools


async def test_stock_firmware_gets_the_vision_endpoint_and_its_camera_only_with_one(fake_llm, start_server):
    fake_llm.default_reply = "🙂 Hello."
    for vision, expect_camera in ((VISION, True), ({}, False)):
        server = await start_server(server_config(fake_llm.base_url, apps=QUIET, vision=vision))
        async with OutsideClient(server.ws.url, "esp32_firmware") as dev:
            await dev.hello()
            await dev.wait_for(lambda: any(p["method"] == "tools/list" for p in dev.mcp_requests), timeout=10)
            sent = dev.initialize_params()["capabilities"]["vision"]
            assert sent["url"] == (VISION["explain_url"] if expect_camera else "")
            # What the model would be offered on this session's next turn.
            session = next(iter(server.services.sessions))

            def offered():
                return [d["function"]["name"] for d in session.tools.declarations(session.dialogue.tool_policy)]
            await dev.wait_for(lambda: "self_get_device_status" in offered(), timeout=5)
            assert ("self_camera_take_photo" in offered()) == expect_camera
