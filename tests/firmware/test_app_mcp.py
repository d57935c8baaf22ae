# The device MCP server: initialize, byte-budget paging, argument checks, errors.
import json

import t
import proto
from app.voice.mcp_server import McpServer


def _tools(log=None):
    out = {}
    for name in proto.DEVICE_TOOL_NAMES:
        def fn(args, _n=name):
            if log is not None:
                log.append((_n, args))
            if _n == "self.mp3.play" and args["name"] == "nope.mp3":
                raise ValueError("no MP3 named 'nope.mp3'")
            if _n == "self.get_device_status":
                raise RuntimeError("sensor broke")
            return {"accepted": True}
        out[name] = fn
    return out


def _req(rid, method, params=None):
    return proto.rpc_request(rid, method, params)


def test_app_mcp_initialize_answers_with_tools_capability():
    r = McpServer(_tools()).handle(_req(1, "initialize", {
        "protocolVersion": proto.MCP_PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "x", "version": "1"}}))
    t.eq(r["id"], 1)
    t.eq(proto.validate("jsonrpc.initialize_result", r["result"]), None)
    t.eq(r["result"]["capabilities"], {"tools": {}})


def _pages(srv):
    pages, cursor = [], None
    for _ in range(20):
        params = {"cursor": cursor} if cursor else {}
        res = srv.handle(_req(len(pages) + 2, "tools/list", params))["result"]
        pages.append((cursor, res))
        cursor = res.get("nextCursor")
        if not cursor:
            return pages
    raise AssertionError("paging never ends")


def test_app_mcp_pages_by_bytes_with_next_cursor_the_first_left_out():
    srv = McpServer(_tools(), page_bytes=700)
    pages = _pages(srv)
    t.eq([c for c, _ in pages], [None, "self.mp3.play", "self.mp3.get_list"])
    names = []
    for cursor, res in pages:
        t.eq(proto.validate("jsonrpc.tools_list_result", res), None)
        size = sum(len(json.dumps(x)) for x in res["tools"])
        t.true(len(res["tools"]) == 1 or size <= 700 + 100, "page fits")
        if cursor:
            t.eq(res["tools"][0]["name"], cursor)
        names.extend(x["name"] for x in res["tools"])
    t.eq(names, list(proto.DEVICE_TOOL_NAMES))


def test_app_mcp_default_budget_is_one_page_and_tiny_budget_one_tool_each():
    t.eq(len(_pages(McpServer(_tools()))), 1)
    t.eq(len(_pages(McpServer(_tools(), page_bytes=10))), len(proto.DEVICE_TOOL_NAMES))


def test_app_mcp_unknown_cursor_is_invalid_params():
    r = McpServer(_tools()).handle(_req(3, "tools/list", {"cursor": "self.nope"}))
    t.eq(r["error"]["code"], proto.RPC_INVALID_PARAMS)


def test_app_mcp_call_validates_arguments_before_the_tool_runs():
    calls = []
    srv = McpServer(_tools(calls))
    for args in ({"name": "../boot.py"}, {"name": "a.mp3", "repeat": 0},
                 {"name": "a.mp3", "repeat": "3"}, {"name": "a.mp3", "repeat": 2.5}, {}):
        r = srv.handle(_req(10, "tools/call", {"name": "self.mp3.play", "arguments": args}))
        t.eq(r["error"]["code"], proto.RPC_INVALID_PARAMS, repr(args))
        t.true(r["error"]["message"], "a message")
    t.eq(calls, [])
    r = srv.handle(_req(11, "tools/call", {"name": "self.mp3.play", "arguments": {"name": "a.mp3", "repeat": 2}}))
    t.eq(r["result"], proto.tool_result({"accepted": True}))
    t.eq(calls, [("self.mp3.play", {"name": "a.mp3", "repeat": 2})])


def test_app_mcp_errors_have_codes_and_messages():
    srv = McpServer(_tools())
    r = srv.handle(_req(5, "tools/call", {"name": "self.nope", "arguments": {}}))
    t.eq(r["error"]["code"], proto.RPC_INVALID_PARAMS)
    t.true("self.nope" in r["error"]["message"])
    r = srv.handle(_req(6, "resources/list"))
    t.eq(r["error"]["code"], proto.RPC_METHOD_NOT_FOUND)
    r = srv.handle(_req(7, "tools/call", {"name": "self.mp3.play", "arguments": {"name": "nope.mp3"}}))
    t.eq((r["error"]["code"], r["error"]["message"]), (proto.RPC_INVALID_PARAMS, "no MP3 named 'nope.mp3'"))
    r = srv.handle(_req(8, "tools/call", {"name": "self.get_device_status", "arguments": {}}))
    t.eq(r["error"]["code"], proto.RPC_INTERNAL_ERROR)
    r = srv.handle({"jsonrpc": "1.0", "id": 9, "method": "initialize"})
    t.eq(r["error"]["code"], proto.RPC_INVALID_REQUEST)


def test_app_mcp_notifications_and_responses_get_no_answer():
    srv = McpServer(_tools())
    t.eq(srv.handle(proto.rpc_notification("notifications/initialized")), None)
    t.eq(srv.handle(proto.rpc_result(4, {})), None)
