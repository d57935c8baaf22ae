"""What the control plane may see and do of a device's voice session,
whichever process holds it.

    view = LocalView(session)               # a session of this process
    view.app, view.task, view.has_tool("self.mp3.get_list")
    text, is_error = await view.call_tool("self.mp3.get_list", {}, timeout=5)
    await view.close("device forgotten")

    describe(session)   # {"device", "session", "app"?, "task"?, "tools"}: one line
                        # of a worker's report (shard/), from which the primary
                        # builds a view with the same four members (shard/pool.py)

The plane (control/plane_family.py) only ever holds a view, so a session in
a worker process answers it the same way as one in the primary.
"""
from __future__ import annotations

from typing import Any

# The device tools a view says it offers: the ones the console asks for.
# (A worker reports only these, not the whole tool list, on every change.)
CONSOLE_TOOLS = ("self.mp3.get_list",)


def describe(session: Any) -> dict:
    runtime = session.runtime
    out = {"device": session.device_id[:256], "session": session.id,
           "tools": [t for t in CONSOLE_TOOLS if session.mcp.has(t)]}
    if runtime is not None and runtime.task is not None:
        out["app"], out["task"] = str(runtime.task.app_id)[:64], str(runtime.task.id)[:64]
    return out


class LocalView:
    """A session of this process, as the plane sees it."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.device_id = session.device_id
        runtime = session.runtime
        task = runtime.task if runtime is not None else None
        self.app = task.app_id if task is not None else None
        self.task = task.id if task is not None else None

    def has_tool(self, name: str) -> bool:
        return self._session.mcp.has(name)

    async def call_tool(self, name: str, args: dict, timeout: float) -> tuple[str, bool]:
        return await self._session.mcp.call(name, args, timeout=timeout)

    async def close(self, reason: str) -> None:
        await self._session.close(reason)
