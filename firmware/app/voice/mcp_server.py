# The device's MCP server: the server is the client, JSON-RPC 2.0 inside
# `mcp` messages.
#
#   srv = McpServer(tools, page_bytes=proto.TOOLS_PAGE_BYTES)
#   reply = srv.handle(payload)     # a JSON-RPC response dict, or None
#
# tools/list pages by bytes, like the stock firmware: a page holds the
# declarations (their JSON text from proto.DEVICE_TOOLS_JSON, plus one
# comma between two) that fit in page_bytes, always at least one;
# nextCursor is the name of the first tool left out and a cursor names the
# first tool of its page. tools/call validates the arguments against the
# generated schema before a tool runs. Every failure is a JSON-RPC error
# with a code and a message; a request never raises out of handle().
import json

import log
import proto

_log = log.get("mcp")

SERVER_NAME = "xiaozhi-apps-device"
SERVER_VERSION = "0.1.0"


class ToolError(ValueError):
    """A tool refused its arguments (answered as RPC_INVALID_PARAMS)."""


def _tool_name(text):
    # Names are the first field of every declaration; parse once at start.
    return json.loads(text)["name"]


class McpServer:
    def __init__(self, tools, page_bytes=proto.TOOLS_PAGE_BYTES):
        """tools: dict name -> fn(args dict) -> value (raise ValueError to refuse)."""
        self.tools = tools
        self.page_bytes = page_bytes
        self._decls = []  # (name, json text), in schema order, served tools only
        for text in proto.DEVICE_TOOLS_JSON:
            name = _tool_name(text)
            if name in tools:
                self._decls.append((name, text))
        self.calls = 0

    def handle(self, payload):
        rid = payload.get("id") if isinstance(payload, dict) else None
        try:
            proto.check("jsonrpc.message", payload, "mcp.payload")
        except proto.ProtoError as e:
            return proto.rpc_error(rid, proto.RPC_INVALID_REQUEST, str(e))
        method = payload.get("method")
        if method is None:
            return None  # a response to something we asked: nothing to answer
        notification = "id" not in payload
        try:
            result = self._dispatch(method, payload)
        except _RpcFailure as f:
            if notification:
                return None
            _log.info("%s refused: %s", method, f.message)
            return proto.rpc_error(rid, f.code, f.message)
        except Exception as e:  # a bug here must still answer the request
            _log.error("%s failed: %r", method, e)
            return None if notification else proto.rpc_error(
                rid, proto.RPC_INTERNAL_ERROR, "%s failed: %s" % (method, e))
        if notification:
            return None
        return proto.rpc_result(rid, result)

    def _dispatch(self, method, payload):
        params = payload.get("params", {})
        sid = proto.RPC_PARAMS_SCHEMA.get(method)
        if sid is not None:
            e = proto.validate(sid, params, method + ".params")
            if e is not None:
                raise _RpcFailure(proto.RPC_INVALID_PARAMS, e)
        if method == "initialize":
            return {"protocolVersion": proto.MCP_PROTOCOL_VERSION,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION}}
        if method == "tools/list":
            return self.list_page(params.get("cursor"))
        if method == "tools/call":
            return self.call(params.get("name"), params.get("arguments"))
        if method.startswith("notifications/"):
            return None
        if method == "ping":
            return {}
        raise _RpcFailure(proto.RPC_METHOD_NOT_FOUND, "Method not found: %s" % method)

    def list_page(self, cursor=None):
        start = 0
        if cursor:
            start = -1
            for i in range(len(self._decls)):
                if self._decls[i][0] == cursor:
                    start = i
                    break
            if start < 0:
                raise _RpcFailure(proto.RPC_INVALID_PARAMS, "Unknown cursor: %s" % cursor)
        tools = []
        used = 0
        i = start
        while i < len(self._decls):
            n = len(self._decls[i][1].encode()) + (1 if tools else 0)
            if tools and used + n > self.page_bytes:
                break
            tools.append(json.loads(self._decls[i][1]))
            used += n
            i += 1
        result = {"tools": tools}
        if i < len(self._decls):
            result["nextCursor"] = self._decls[i][0]
        return result

    def call(self, name, args):
        fn = self.tools.get(name)
        if fn is None:
            raise _RpcFailure(proto.RPC_INVALID_PARAMS, "Unknown tool: %s" % name)
        args = args if args is not None else {}
        try:
            proto.check_tool_args(name, args)
        except proto.ProtoError as e:
            raise _RpcFailure(proto.RPC_INVALID_PARAMS, "Invalid arguments for %s: %s" % (name, e))
        self.calls += 1
        try:
            value = fn(args)
        except ValueError as e:  # includes ToolError and the player's refusals
            raise _RpcFailure(proto.RPC_INVALID_PARAMS, str(e))
        except Exception as e:
            _log.error("tool %s failed: %r", name, e)
            raise _RpcFailure(proto.RPC_INTERNAL_ERROR, "%s failed: %s" % (name, e))
        return proto.tool_result(value)


class _RpcFailure(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message
