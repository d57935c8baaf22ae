"""A device's tool list cannot make the LLM request unbounded or invalid
(issue 26): huge schemas and descriptions, schemas the model's API refuses,
duplicate names, control characters, names longer than the API takes or
colliding with a server tool, and a cursor that loops. The session goes
on, and every request to the model carries a bounded, valid tool table."""
import asyncio
import json
import re

from testkit.control_api import eventually
from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server.mcp import device_client

OPENAI_NAME = re.compile(r"^[A-Za-z0-9_\-\u4e00-\u9fff]{1,64}$")


def tool(name, description="a tool", schema=None):
    return {"name": name, "description": description,
            "inputSchema": schema if schema is not None else {"type": "object", "properties": {}}}


def hostile_pages():
    big_schema = {"type": "object", "properties": {"p%03d" % i: {"type": "string", "description": "y" * 40}
                                                   for i in range(150)}}
    pages = [[tool("self.big_%d" % i, "x" * 3900) for i in range(6)],
             [tool("self.huge_schema", schema=big_schema)],
             [tool("self.bad_type", schema={"type": "banana"}),
              tool("self.bad_props", schema={"type": "object", "properties": ["a", "b"]}),
              tool("self.bad_required", schema={"type": "object", "required": "a"}),
              tool("self.dup"), tool("self.dup", "second"), tool("self_dup", "sanitises to the first"),
              tool("self.\x00\x07bell\n\u202etxt"), tool("self." + "long" * 31), tool("self." + "x" * 95),
              tool("translate", "a device's translate")]]
    pages += [[tool("self.page_%d_%d" % (p, i)) for i in range(8)] for p in range(12)]
    return pages


class HostileDevice(WireDevice):
    """Serves `pages` of tools/list; the last page's cursor points back at the second."""

    def __init__(self, url, pages):
        super().__init__(url)
        self.pages = pages

    async def _serve_mcp(self, p):
        if p.get("method") != "tools/list":
            return await super()._serve_mcp(p)
        cursor = (p.get("params") or {}).get("cursor")
        self.list_cursors.append(cursor)
        i = int(cursor) if cursor else 0
        await self._mcp_reply({"jsonrpc": "2.0", "id": p["id"], "result": {
            "tools": self.pages[i], "nextCursor": str(i + 1 if i + 1 < len(self.pages) else 1)}})


async def test_a_hostile_tool_list_leaves_a_bounded_valid_llm_request(fake_llm, start_server):
    server = await start_server(server_config(fake_llm.base_url), with_mcp=True)
    async with HostileDevice(server.ws.url, hostile_pages()) as dev:
        await dev.hello()
        await eventually(lambda: server.services.sessions, timeout=60)
        session = next(iter(server.services.sessions))
        await asyncio.wait_for(session.mcp.ready.wait(), 60)
        fake_llm.reply("🙂 Still here.")
        await dev.detect("what can you do")
        await dev.wait_json("tts", state="stop", timeout=60)
        assert "Still here." in dev.texts() and dev.closed is None
    assert len(dev.list_cursors) <= device_client.MAX_PAGES
    tools = fake_llm.requests[-1].body["tools"]
    names = [t["function"]["name"] for t in tools]
    assert len(names) == len(set(names))
    assert all(OPENAI_NAME.match(n) for n in names), [n for n in names if not OPENAI_NAME.match(n)]
    for t in tools:
        params = t["function"]["parameters"]
        assert params.get("type", "object") == "object" and isinstance(params.get("properties", {}), dict)
    device_tools = [t for t in tools if t["function"]["name"].startswith("self")]
    assert len(json.dumps(device_tools).encode()) <= device_client.MAX_TOOL_BYTES + 2 * len(device_tools)
    assert not any(n.startswith("self_bad_") for n in names)
    assert "self_huge_schema" not in names
    assert [t["function"]["description"] for t in tools if t["function"]["name"] == "self_dup"] == ["a tool"]
    assert session.tools.get("translate").origin == "server"


async def test_three_thousand_tools_in_one_page_close_that_device_only(fake_llm, start_server):
    server = await start_server(server_config(fake_llm.base_url))
    page = [tool("self.t%04d" % i) for i in range(3000)]
    async with HostileDevice(server.ws.url, [page]) as flooder:
        await flooder.hello()
        # Over the 64 KB frame limit: the WebSocket layer closes it.
        assert (await flooder.wait_closed(timeout=60))[0] == 1009
    async with WireDevice(server.ws.url, device_id="aa:bb:cc:00:12:02", mcp=False) as other:
        assert (await other.hello())["session_id"]
