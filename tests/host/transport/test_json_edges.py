"""JSON that parses but cannot be used is refused where it enters, with a
reason, and costs nothing else (issue 12, items 6 and 10): a lone surrogate
("\\ud800": no UTF-8 text can carry it, so it broke the session's next send)
and nesting past MAX_JSON_DEPTH (thousands of levels made json.loads raise
RecursionError, which ended the session, or a 500 over HTTP)."""
import logging

import aiohttp
import pytest

from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server import protocol as proto

from edge_clients import HOST

LONE = '{"type":"listen","state":"detect","text":"hi \\ud800 there"}'
LONE_LOW_KEY = '{"type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":{"\\udc00":1}}}'
NESTED_40 = '{"type":"mcp","payload":{"jsonrpc":"2.0","id":1,"result":' + '{"a":' * 40 + '1' + '}' * 40 + '}}'
NESTED_20000 = '{"type":"listen","state":"detect","text":"x","extra":' + '[' * 20000 + ']' * 20000 + '}'


@pytest.mark.parametrize("bad,reason", [
    (LONE, "message.text holds a lone surrogate"),
    (LONE_LOW_KEY, "a key holds a lone surrogate"),
    (NESTED_40, "nested deeper than %d levels" % proto.MAX_JSON_DEPTH),
    (NESTED_20000, "nested deeper than %d levels" % proto.MAX_JSON_DEPTH),
])
async def test_unusable_json_is_refused_with_a_reason_and_the_session_goes_on(
        fake_llm, start_server, caplog, bad, reason):
    caplog.set_level(logging.INFO)
    server = await start_server(server_config(fake_llm.base_url))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.hello()
        await dev.ws.send(bad)
        fake_llm.reply("🙂 Still listening.")
        await dev.detect("are you still there")
        await dev.wait_json("tts", state="stop", timeout=60)
        assert "Still listening." in dev.texts()
        assert dev.closed is None
    assert reason in caplog.text


def test_an_escaped_surrogate_pair_is_one_character_and_accepted():
    msg = proto.decode_json('{"type":"listen","state":"detect","text":"\\ud83d\\ude00"}')
    assert msg["text"] == "\U0001F600"
    deep_enough = '{"a":' + "[" * (proto.MAX_JSON_DEPTH - 1) + "]" * (proto.MAX_JSON_DEPTH - 1) + "}"
    assert proto.decode_json(deep_enough)["a"]


@pytest.mark.parametrize("body,reason", [
    ('{"application":{"version":"\\ud800"}}', "lone surrogate"),
    ('{"board":' + '[' * 40 + ']' * 40 + '}', "nested deeper than"),
    ('{"board":' + '[' * 20000 + ']' * 20000 + '}', "nested deeper than"),
])
async def test_ota_body_with_unusable_json_is_a_400_with_the_reason(start_server, body, reason):
    server = await start_server(server_config())
    async with aiohttp.ClientSession() as s:
        async with s.post("http://%s:%d/xiaozhi/ota/" % (HOST, server.http.port), data=body,
                          headers={"Device-Id": "aa:bb:cc:00:00:01", "Content-Type": "application/json"}) as r:
            answer = await r.json()
            assert r.status == 400 and reason in answer["error"], answer
        async with s.get("http://%s:%d/health" % (HOST, server.http.port)) as r:
            assert r.status == 200
