# The gateway's runner on the device: the one generic stop of whatever
# runs, and the hand-off of an accepted task to the server as a JSON-RPC
# app/start_task request inside an mcp message (the channel's call(): the
# answer carries our request id and goes back to the caller, never to the
# device MCP server).
import asyncio

import log
import proto
from app.entry.gateway import HandOffError
from app.player.player import IDLE

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

HAND_OFF_TIMEOUT_MS = const(10000)  # real ms for the server's app/start_task answer
TOOLS_LISTED_MS = const(3000)       # wait this long for the server to list our tools

_log = log.get("handoff")


class HandOff:
    """The runner the gateway drives, given only what it uses: the SD
    player (is something playing?) and the conversation `session`, through
    its public side: stop_all(reason), listen(), connect(), tools_listed
    (an asyncio.Event) and call(method, params, timeout_ms)."""

    def __init__(self, player, session):
        self.player = player
        self.session = session
        self._talking = False      # in a conversation when the last stop came

    def playing(self):
        return self.player.state != IDLE

    async def stop_all(self):
        """Stop whatever runs: the player, a reply in flight, listening."""
        self._talking = await self.session.stop_all("preempted")

    async def back_to_default(self):
        """A task that did not start: a conversation it stopped listens again."""
        if self._talking:
            self._talking = False
            await self.session.listen()

    async def hand_off(self, task):
        """Give an accepted task to the server (app/start_task), opening the
        channel if needed; the server runs its skills. The boot's default
        chat needs no request: the server starts every session in it and
        speaks first."""
        if not await self.session.connect():
            raise HandOffError(proto.ACK_FAILED, "server_unreachable", "cannot reach the server")
        if task["source"] == proto.SOURCE_DEFAULT_CHAT:
            result = {"accepted": True, "interaction_mode": proto.MODE_CHAT}
        else:
            result = await self._request_task(task)
        if result.get("accepted") and result.get("interaction_mode") != proto.MODE_PLAY_AUDIO:
            await self.session.listen()
        return result

    async def _request_task(self, task):
        # The server runs device skills through our tools: let it list them first.
        try:
            await asyncio.wait_for(self.session.tools_listed.wait(), TOOLS_LISTED_MS / 1000)
        except asyncio.TimeoutError:
            _log.warn("the server has not listed our tools; asking anyway")
        params = proto.app_start_task(task["app_id"], task["task_id"], task["source"], task["params"])
        try:
            reply = await self.session.call(proto.METHOD_APP_START_TASK, params, HAND_OFF_TIMEOUT_MS)
        except asyncio.TimeoutError:
            raise HandOffError(proto.ACK_FAILED, "server_timeout", "the server did not answer app/start_task")
        if reply is None:
            raise HandOffError(proto.ACK_FAILED, "server_unreachable", "the connection ended")
        if "error" in reply:
            err = reply["error"] or {}
            raise HandOffError(proto.ACK_REFUSED, "server_error", err.get("message") or "refused")
        result = reply.get("result")
        if not isinstance(result, dict) or proto.validate("jsonrpc.app_start_task_result", result):
            raise HandOffError(proto.ACK_FAILED, "bad_answer", "unusable app/start_task answer")
        return result
