"""Every client message with wrong types and missing fields, binary frames
before the hello, v2/v3 binary headers whose lengths lie, and frames over
the limit (issue 26): each gets a clear close or is ignored with a log
line; no handler fails with a traceback, the session goes on and the
server keeps answering."""
import json
import logging
import struct

import aiohttp
import pytest
import websockets

from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server import protocol as proto

from edge_clients import HOST

WRONG = [
    # hello, again after the handshake, wrong in every field
    {"type": "hello", "version": "1", "audio_params": "opus", "features": []},
    {"type": "hello", "audio_params": {"sample_rate": -1, "channels": "mono", "frame_duration": None}},
    # listen
    {"type": "listen"}, {"type": "listen", "state": 1}, {"type": "listen", "state": "detect"},
    {"type": "listen", "state": "detect", "text": 5}, {"type": "listen", "state": "start", "mode": ["auto"]},
    {"type": "listen", "state": "stop", "session_id": {"id": 1}},
    # abort
    {"type": "abort", "reason": 7}, {"type": "abort", "reason": "x" * 70},
    # mcp
    {"type": "mcp"}, {"type": "mcp", "payload": "text"}, {"type": "mcp", "payload": []},
    {"type": "mcp", "payload": {}}, {"type": "mcp", "payload": {"jsonrpc": "1.0", "id": 1, "result": {}}},
    {"type": "mcp", "payload": {"jsonrpc": "2.0", "id": [1], "result": {}}},
    {"type": "mcp", "payload": {"jsonrpc": "2.0", "id": 1, "error": "boom"}},
    {"type": "mcp", "payload": {"jsonrpc": "2.0", "id": 99999, "result": None}},
    {"type": "mcp", "payload": {"jsonrpc": "2.0", "method": "app/start_task", "id": 3, "params": "x"}},
    {"type": "mcp", "payload": {"jsonrpc": "2.0", "method": "app/start_task", "id": 4, "params": {}}},
    {"type": "mcp", "payload": {"jsonrpc": "2.0", "method": "tools/call", "id": 5, "params": {"name": 1}}},
    {"type": "mcp", "payload": {"jsonrpc": "2.0", "method": "", "id": 6}},
    # iot (legacy)
    {"type": "iot", "descriptors": "x"}, {"type": "iot", "states": {"a": 1}, "update": "yes"},
    # the envelope itself
    {"type": 5}, {"type": None}, {}, {"type": "goodbye", "session_id": 12}, {"type": "unknown-kind"},
]
RAW = ["null", "[]", "42", '"hello"', "{", '{"type": "listen", "state": "detect", "text": "\\ud800"}']


def _v2(payload_len, actual):
    return struct.pack(proto.BIN_V2_FORMAT, 2, 0, 0, 0, payload_len) + bytes(actual)


def _v3(payload_len, actual):
    return struct.pack(proto.BIN_V3_FORMAT, 0, 0, payload_len) + bytes(actual)


@pytest.mark.parametrize("version", [1, 2, 3])
async def test_every_malformed_message_is_ignored_and_the_session_goes_on(fake_llm, start_server, caplog, version):
    caplog.set_level(logging.INFO)
    server = await start_server(server_config(fake_llm.base_url))
    async with WireDevice(server.ws.url, version=version, mcp=False) as dev:
        await dev.ws.send(b"\x00\x01 audio before the hello")
        await dev.hello()
        for msg in WRONG:
            await dev.ws.send(json.dumps(msg))
        for text in RAW:
            await dev.ws.send(text)
        bad_frames = [b"", b"\x02", _v2(0, 0), _v2(500, 10), _v2(10, 500), _v2(0xFFFFFFFF, 3),
                      _v3(0, 0), _v3(500, 10), _v3(0xFFFF, 3), struct.pack(proto.BIN_V2_FORMAT, 9, 9, 0, 0, 3) + b"abc"]
        for frame in bad_frames:
            await dev.ws.send(frame)
        fake_llm.reply("🙂 Still here.")
        await dev.detect("are you there")
        await dev.wait_json("tts", state="stop", timeout=60)
        assert "Still here." in dev.texts() and dev.closed is None
    failed = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not failed, [r.getMessage()[:200] for r in failed]
    async with aiohttp.ClientSession() as s:
        async with s.get("http://%s:%d/health" % (HOST, server.http.port)) as r:
            assert r.status == 200


async def test_frames_over_the_limit_are_closed_with_1009_and_others_still_connect(fake_llm, start_server):
    server = await start_server(server_config(fake_llm.base_url))
    for giant in ("x" * (proto.MAX_TEXT_MESSAGE + 1), b"\x00" * (proto.MAX_TEXT_MESSAGE + 1)):
        async with WireDevice(server.ws.url, mcp=False) as dev:
            await dev.hello()
            try:
                await dev.ws.send(giant)
            except websockets.ConnectionClosed:
                pass
            assert (await dev.wait_closed())[0] == 1009
    async with WireDevice(server.ws.url, mcp=False) as dev:
        assert (await dev.hello())["session_id"]


async def test_a_refused_request_with_an_id_is_answered_with_that_id(fake_llm, start_server):
    """Issue 27: the sender of a refused request learns at once why, by its id;
    messages without an id, and answers, are still only logged."""
    server = await start_server(server_config(fake_llm.base_url))
    async with WireDevice(server.ws.url, mcp=False) as dev:
        await dev.send_json({"type": "listen", "state": "start", "id": 1})
        await dev.hello()
        sent = [
            {"type": "listen", "state": "bogus", "id": 7},
            {"type": "listen", "state": "detect", "text": "\ud800", "id": "lone"},
            {"type": "unknown-kind", "id": "u-1"},
            {"type": "abort", "reason": 7, "id": {"not": "an id"}},
            {"type": "mcp", "session_id": 12,
             "payload": {"jsonrpc": "2.0", "id": 11, "method": "app/start_task", "params": {}}},
            {"type": "mcp", "payload": {"jsonrpc": "1.0", "id": "m-12", "method": "tools/list"}},
            # not answered: no id, or an answer (JSON-RPC never answers one)
            {"type": "listen", "state": "bogus"},
            {"type": "mcp", "payload": {"jsonrpc": "1.0", "id": 99999, "result": {}}},
        ]
        for msg in sent:
            await dev.ws.send(json.dumps(msg))     # ASCII: the surrogate stays a \ud800 escape
        await dev.send_json({"type": "listen", "state": "bogus", "id": "last"})
        await dev.wait_json("error", id="last")
        errors = [m for _t, m in dev.json if m["type"] == "error"]
        rpc = [m["payload"] for _t, m in dev.json if m["type"] == "mcp"]
        assert [(e["id"], e.get("request")) for e in errors] == [
            (1, "listen"), (7, "listen"), ("lone", "listen"), ("u-1", "unknown-kind"), (None, "abort"),
            ("last", "listen")]
        assert "before hello" in errors[0]["reason"] and "state" in errors[1]["reason"]
        assert "surrogate" in errors[2]["reason"] and "unknown message type" in errors[3]["reason"]
        assert all(proto.validate("ws.error", e) is None for e in errors)
        assert [(p["id"], p["error"]["code"]) for p in rpc] == [
            (11, proto.RPC_INVALID_REQUEST), ("m-12", proto.RPC_INVALID_REQUEST)]
        assert "session_id" in rpc[0]["error"]["message"] and "jsonrpc" in rpc[1]["error"]["message"]
        assert dev.closed is None
