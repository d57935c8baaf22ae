"""The server's own MCP processes (data/mcp_servers.json) as tools every
new session is offered. The MCP client library loads only when the file
lists a process."""
from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from .tools import Tool, ToolOutcome

if TYPE_CHECKING:
    from .server_processes import ServerProcesses

log = logging.getLogger("xiaozhi_server.server")


def default_mcp_config() -> str:
    return os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "mcp_servers.json")


async def start_server_tools(config: dict, services: Any) -> ServerProcesses | None:
    """Start the server's own MCP processes and offer their tools to every new
    session; the ServerProcesses (close() them at the end), or None."""
    path = config.get("mcp_servers_file") or default_mcp_config()
    if not os.path.exists(path):
        return None
    from .server_processes import ServerProcesses
    processes = ServerProcesses(path)
    await processes.start()
    tools = []
    for decl in processes.tools():
        async def run(args, _name=decl["name"]):
            text, is_error = await processes.call(_name, args)
            return ToolOutcome(text, is_error=is_error)
        tools.append(Tool(decl["name"], decl.get("description"), decl.get("inputSchema"), "server", run))
    services.set_server_tools(tools)
    log.info("server MCP tools: %s", ", ".join(t.name for t in tools) or "none")
    return processes
