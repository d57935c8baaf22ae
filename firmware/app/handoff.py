# The gateway's runner on the device: the one generic stop of whatever
# runs, and the hand-off of an accepted task to the server as a JSON-RPC
# app/start_task request inside an mcp message (DESIGN 2.2). The answer
# comes back through Device._on_mcp (replies carry our request id).
import asyncio

import log
import proto
from app.gateway import HandOffError
from app.player import IDLE

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

HAND_OFF_TIMEOUT_MS = const(10000)  # real ms for the server's app/start_task answer
TOOLS_LISTED_MS = const(3000)       # wait this long for the server to list our tools
_FIRST_ID = const(1000000)          # our request ids, far from the server's own

_log = log.get("handoff")


class HandOff:
    def __init__(self, device):
        self.dev = device
        self._rpc_id = _FIRST_ID
        self._talking = False      # in a conversation when the last stop came

    def playing(self):
        return self.dev.player.state != IDLE

    async def stop_all(self):
        """Stop whatever runs: the player, a reply in flight, listening."""
        d = self.dev
        self._talking = d.channel.is_open() and d.state.is_(proto.STATE_SPEAKING, proto.STATE_LISTENING)
        d.player.stop()
        if d.channel.is_open() and d.state.is_(proto.STATE_SPEAKING):
            await d._abort("preempted")
        await d._stop_listening()
        if d.state.is_(proto.STATE_SPEAKING, proto.STATE_LISTENING):
            d.state.go(proto.STATE_IDLE)

    async def back_to_default(self):
        """A task that did not start: a conversation it stopped listens again."""
        d = self.dev
        if self._talking:
            self._talking = False
            async with d._busy:
                if d.channel.is_open() and d.state.is_(proto.STATE_IDLE):
                    await d._start_listening()

    async def hand_off(self, task):
        """Give an accepted task to the server (app/start_task), opening the
        channel if needed; the server runs its skills. The boot's default
        chat needs no request: the server starts every session in it and
        speaks first."""
        d = self.dev
        async with d._busy:
            if not await d._ensure_channel():
                raise HandOffError(proto.ACK_FAILED, "server_unreachable", "cannot reach the server")
        if task["source"] == proto.SOURCE_DEFAULT_CHAT:
            result = {"accepted": True, "interaction_mode": proto.MODE_CHAT}
        else:
            result = await self._request_task(task)
        if result.get("accepted") and result.get("interaction_mode") != proto.MODE_PLAY_AUDIO:
            async with d._busy:
                if not d.state.is_(proto.STATE_LISTENING, proto.STATE_SPEAKING):
                    await d._start_listening()
        return result

    async def _request_task(self, task):
        # The server runs device skills through our tools: let it list them first.
        d = self.dev
        try:
            await asyncio.wait_for(d._tools_listed.wait(), TOOLS_LISTED_MS / 1000)
        except asyncio.TimeoutError:
            _log.warn("the server has not listed our tools; asking anyway")
        self._rpc_id += 1
        rid = self._rpc_id
        slot = [asyncio.Event(), None]
        d._rpc_wait[rid] = slot
        try:
            params = proto.app_start_task(task["app_id"], task["task_id"], task["source"],
                                          task["params"])
            await d.channel.send(proto.mcp(proto.rpc_request(rid, proto.METHOD_APP_START_TASK, params),
                                           d.channel.session_id))
            await asyncio.wait_for(slot[0].wait(), HAND_OFF_TIMEOUT_MS / 1000)
        except asyncio.TimeoutError:
            raise HandOffError(proto.ACK_FAILED, "server_timeout", "the server did not answer app/start_task")
        except OSError as e:
            raise HandOffError(proto.ACK_FAILED, "server_unreachable", "send failed: %r" % (e,))
        finally:
            d._rpc_wait.pop(rid, None)
        reply = slot[1]
        if reply is None:
            raise HandOffError(proto.ACK_FAILED, "server_unreachable", "the connection ended")
        if "error" in reply:
            err = reply["error"] or {}
            raise HandOffError(proto.ACK_REFUSED, "server_error", err.get("message") or "refused")
        result = reply.get("result")
        if not isinstance(result, dict) or proto.validate("jsonrpc.app_start_task_result", result):
            raise HandOffError(proto.ACK_FAILED, "bad_answer", "unusable app/start_task answer")
        return result

