"""What a device declares cannot crowd out or take over the server's tools
(issue 12, item 10): at most MAX_TOOLS device tools, and a device tool
named like a server or built-in tool (or sanitised to the same LLM name)
is refused, whichever arrives first."""
import asyncio

from testkit.control_api import eventually
from testkit.server import server_config
from testkit.wire_device import WireDevice
from xiaozhi_server.mcp import device_client
from xiaozhi_server.mcp.tools import Tool, ToolOutcome, ToolTable


async def test_device_tools_are_bounded_and_never_replace_server_tools(fake_llm, start_server):
    server = await start_server(server_config(fake_llm.base_url), with_mcp=True)
    tools = {"translate": lambda a: "device translate", "switch.app": lambda a: "device switch",
             "start_repeater": lambda a: "device repeater"}
    tools.update({"self.extra_%03d" % i: (lambda a: True) for i in range(100)})
    async with WireDevice(server.ws.url, tools=tools, page_limit=10) as dev:
        await dev.hello()
        await eventually(lambda: server.services.sessions, timeout=60)
        session = next(iter(server.services.sessions))
        await asyncio.wait_for(session.mcp.ready.wait(), 60)
        assert len(dev.list_cursors) < 10           # paging stopped at the cap
        fake_llm.reply("🙂 I can chat with you.")
        await dev.detect("what can you do")
        await dev.wait_json("tts", state="stop", timeout=60)
    assert len(session.mcp.tools) == device_client.MAX_TOOLS
    for name in ("translate", "switch_app", "start_repeater"):
        assert session.tools.get(name).origin in ("server", "builtin"), name
    offered = {t["function"]["name"]: t["function"]["description"] for t in fake_llm.requests[-1].body["tools"]}
    assert not any(d.startswith("test tool") and n in ("translate", "switch_app", "start_repeater")
                   for n, d in offered.items())
    assert sum(n.startswith("self_extra_") for n in offered) == device_client.MAX_TOOLS - 3


async def test_a_server_tool_added_after_a_device_tool_of_the_same_name_takes_the_name():
    async def run(_args):
        return ToolOutcome("ran")
    table = ToolTable()
    assert table.add(Tool("switch.app", "device's", None, "device", run))
    assert table.add(Tool("switch_app", "server's", None, "builtin", run))
    assert not table.add(Tool("switch.app", "device's again", None, "device", run))
    table.replace_origin("device", [Tool("switch-app", "fine", None, "device", run),
                                    Tool("switch.app", "refused", None, "device", run)])
    assert table.get("switch_app").description == "server's"
    assert table.get("switch-app").description == "fine"
