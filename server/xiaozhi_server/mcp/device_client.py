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

Every device tool goes into every LLM request, so what a device declares
is bounded and checked before the model sees it (`usable()`): at most
MAX_TOOLS tools and MAX_TOOL_BYTES of declarations, each at most
MAX_DECLARATION_BYTES; an inputSchema that is not an object schema (the
model's API would refuse the whole request) drops its tool; a name that
comes again (as given, or as the LLM name it sanitises to) keeps its first
tool. Each dropped tool is logged.
"""
import asyncio
import json
import logging
from typing import Any, Awaitable, Callable

from .. import protocol as proto
from .tools import Tool, ToolOutcome, needs_vision, sanitize

log = logging.getLogger(__name__)

LIST_IDS = 1        # initialize and tools/list pages: 1, 2, 3, ...
CALL_IDS = 10000    # tools/call: 10000 and up
MAX_PAGES = 50
# Tools one device may declare: each one goes into every LLM request.
MAX_TOOLS = 64
MAX_DECLARATION_BYTES = 4096     # one tool: name, description and inputSchema, as JSON
MAX_TOOL_BYTES = 32768           # all of one device's tools


def _schema_problem(schema):
    """Why an inputSchema cannot go to the model as a function's parameters, or None."""
    if schema.get("type", "object") != "object":
        return "its inputSchema is not of type object"
    props = schema.get("properties", {})
    if not isinstance(props, dict) or not all(isinstance(p, dict) for p in props.values()):
        return "its inputSchema's properties are not an object of schemas"
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return "its inputSchema's required is not a list of names"
    return None


def usable(declarations):
    """The device's declarations the model may see, in order: bounded, valid, unique."""
    out, names, total, dropped = [], set(), 0, []
    for decl in declarations:
        name = decl["name"]
        why = _schema_problem(decl["inputSchema"])
        size = len(json.dumps(decl, ensure_ascii=False).encode())
        if why is None and (name in names or sanitize(name) in names):
            why = "its name comes twice"
        if why is None and size > MAX_DECLARATION_BYTES:
            why = "its declaration is %d bytes (at most %d)" % (size, MAX_DECLARATION_BYTES)
        if why is None and total + size > MAX_TOOL_BYTES:
            why = "the device's tools are over %d bytes" % MAX_TOOL_BYTES
        if why is None and len(out) >= MAX_TOOLS:
            why = "the device declares more than %d tools" % MAX_TOOLS
        if why is not None:
            dropped.append("%r: %s" % (name[:40], why))
            continue
        names.update((name, sanitize(name)))
        total += size
        out.append(decl)
    if dropped:     # one line, however many: a device's list is not worth a line per tool
        log.warning("%d device tools not used: %s", len(dropped), "; ".join(dropped)[:400])
    return out


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
        """initialize, then every tools/list page. Returns the declarations.
        `ready` is set at the end even when the device fails: nothing waits for ever."""
        try:
            return await self._start()
        finally:
            self.ready.set()

    async def _start(self):
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
            if err and not (isinstance(page, dict) and isinstance(page.get("tools"), list)):
                raise DeviceMcpError("tools/list answer does not fit the protocol: %s" % err)
            if err:     # one bad declaration costs its own tool, not the others
                good = [t for t in page["tools"] if proto.validate("jsonrpc.tool", t) is None]
                log.warning("device tools/list: %d of %d declarations do not fit the protocol (%s): left out",
                            len(page["tools"]) - len(good), len(page["tools"]), err)
                page = {"tools": good, "nextCursor": page.get("nextCursor")}
                if proto.validate("jsonrpc.tools_list_result", page) is not None:
                    page.pop("nextCursor")      # a cursor that does not fit ends the paging
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
        self.tools = usable(tools)
        log.info("device offers %d tools: %s", len(self.tools), ", ".join(t["name"][:64] for t in self.tools))
        return self.tools

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
