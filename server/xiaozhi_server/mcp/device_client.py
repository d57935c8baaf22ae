"""The MCP client of one device's tool server, over the session's `mcp` messages.

After a hello with features.mcp the server sends `initialize`, then
`tools/list` pages following `nextCursor` to the end (stock servers that
stop at the first page lose tools). Request ids come from two ranges so a
tool call can never be mistaken for the answer to initialize or a list
page. Device errors may lack `code` (stock firmware): accepted. A call
that gets no answer within its timeout becomes an error result the LLM
can read; nothing raises into the dialogue.

`initialize` always carries capabilities.vision {url, token}, as stock
servers send it (url empty without a vision endpoint): xiaozhi-sdk fails
on an initialize without it and the session would lose every device tool.
The device's camera tools reach the model only when a vision endpoint is
configured, since without one a photo cannot be explained.
"""
import asyncio
import logging
from typing import Any, Awaitable, Callable

from .. import protocol as proto
from .tools import Tool, ToolOutcome, needs_vision

log = logging.getLogger(__name__)

LIST_IDS = 1        # initialize and tools/list pages: 1, 2, 3, ...
CALL_IDS = 10000    # tools/call: 10000 and up
MAX_PAGES = 50
# Tools one device may declare: each one goes into every LLM request.
MAX_TOOLS = 64


class DeviceMcpError(Exception):
    pass


class DeviceMcp:
    def __init__(self, send_payload: Callable[[dict], Awaitable[None]], timeout_s: float = 10,
                 vision: dict | None = None) -> None:
        """send_payload: async callable(jsonrpc dict) that wraps it in an mcp message.
        vision: the config's vision section (explain_url, token), or None."""
        self._send = send_payload
        vision = vision or {}
        self.vision = {"url": vision.get("explain_url") or "", "token": vision.get("token") or ""}
        self.timeout_s = timeout_s
        self._next_list = LIST_IDS
        self._next_call = CALL_IDS
        self._pending: dict[Any, asyncio.Future] = {}   # by JSON-RPC id
        self.tools: list[dict] = []          # declarations, in the device's order
        self.server_info = None
        self.ready = asyncio.Event()

    # ---- requests ----

    async def _request(self, method, params, call=False, timeout=None):
        if call:
            rid, self._next_call = self._next_call, self._next_call + 1
        else:
            rid, self._next_list = self._next_list, self._next_list + 1
        fut = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            await self._send(proto.rpc_request(rid, method, params))
            return await asyncio.wait_for(fut, timeout or self.timeout_s)
        except asyncio.TimeoutError:
            raise DeviceMcpError("the device did not answer %s within %g s" % (method, timeout or self.timeout_s))
        finally:
            self._pending.pop(rid, None)

    def on_payload(self, payload: dict) -> bool:
        """A JSON-RPC response from the device. True if it answered one of ours."""
        rid = payload.get("id")
        fut = self._pending.get(rid)
        if fut is None or fut.done():
            if "method" not in payload:
                log.info("device MCP answer to unknown id %r ignored", rid)
            return False
        if "error" in payload:
            err = payload["error"] or {}
            fut.set_exception(DeviceMcpError(err.get("message") or "error %s" % err.get("code")))
        else:
            fut.set_result(payload.get("result"))
        return True

    async def start(self) -> list[dict]:
        """initialize, then every tools/list page. Returns the declarations."""
        params: dict[str, Any] = {
            "protocolVersion": proto.MCP_PROTOCOL_VERSION,
            "capabilities": {"vision": dict(self.vision)},
            "clientInfo": {"name": "xiaozhi-apps-server", "version": "0.1"},
        }
        err = proto.validate("jsonrpc.initialize_params", params)
        if err:
            log.error("vision config does not fit initialize (%s): sent without an endpoint", err)
            params["capabilities"]["vision"] = {"url": "", "token": ""}
        info = await self._request("initialize", params)
        if proto.validate("jsonrpc.initialize_result", info or {}) is not None:
            log.warning("device initialize result is unusual: %s", proto.validate("jsonrpc.initialize_result", info or {}))
        self.server_info = (info or {}).get("serverInfo")
        tools, cursor, seen = [], None, set()
        for _ in range(MAX_PAGES):
            params = {"withUserTools": False}
            if cursor:
                params["cursor"] = cursor
            page = await self._request("tools/list", params)
            err = proto.validate("jsonrpc.tools_list_result", page)
            if err:
                raise DeviceMcpError("tools/list answer does not fit the protocol: %s" % err)
            tools.extend(page["tools"])
            cursor = page.get("nextCursor")
            if len(tools) > MAX_TOOLS or (len(tools) == MAX_TOOLS and cursor):
                log.warning("device declares more than %d tools: only the first %d are used", MAX_TOOLS, MAX_TOOLS)
                tools = tools[:MAX_TOOLS]
                break
            if not cursor:
                break
            if cursor in seen:
                log.warning("device repeated tools/list cursor %r; stopping", cursor)
                break
            seen.add(cursor)
        self.tools = tools
        self.ready.set()
        log.info("device offers %d tools: %s", len(tools), ", ".join(t["name"] for t in tools))
        return tools

    async def call(self, name: str, arguments: dict | None, timeout: float | None = None) -> tuple[str, bool]:
        """(text, is_error) of one device tool call."""
        try:
            result = await self._request("tools/call", {"name": name, "arguments": arguments or {}},
                                         call=True, timeout=timeout)
        except DeviceMcpError as e:
            return "error: %s" % e, True
        if not isinstance(result, dict):
            return "error: the device sent no result", True
        texts = [c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict)]
        return "\n".join(texts), bool(result.get("isError"))

    def as_tools(self) -> list[Tool]:
        """Table entries for the LLM, one per device tool (camera tools only with vision)."""
        out = []
        for decl in self.tools:
            name = decl["name"]
            if needs_vision(name) and not self.vision["url"]:
                continue

            async def run(args, _name=name):
                text, is_error = await self.call(_name, args)
                return ToolOutcome(text, is_error=is_error)
            out.append(Tool(name, decl.get("description"), decl.get("inputSchema"), "device", run))
        return out

    def has(self, name: str) -> bool:
        return any(t["name"] == name for t in self.tools)

    def close(self) -> None:
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(DeviceMcpError("the device disconnected"))
        self._pending.clear()
