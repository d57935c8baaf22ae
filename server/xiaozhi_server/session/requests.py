"""The device's own JSON-RPC requests to the server, inside `mcp` messages
(the answers to our tool calls go to mcp/device_client.py instead).

The one method served today is `app/start_task` (MQTT, alarms, offline
command words on the board): it goes to the App Runtime's one entry. A
request is served off the receive loop, because its handler may itself
wait for the device's answers, which that loop has to read.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from .. import protocol as proto
from ..runtime.runtime import TaskError

if TYPE_CHECKING:
    from ..runtime.runtime import AppRuntime

log = logging.getLogger(__name__)


class DeviceRequests:
    def __init__(self, session: Any) -> None:
        self.session = session      # its spawn, device_id and _send_rpc (the wire)
        # method -> async fn(params) -> result
        self.handlers: dict[str, Callable[[dict], Awaitable[Any]]] = {}

    def serve_runtime(self, runtime: AppRuntime) -> None:
        async def app_start_task(params):
            try:
                return await runtime.start_app_task(params["app_id"], params["task_id"],
                                                    params.get("params"), params["source"])
            except TaskError as e:
                err = proto.ProtoError(str(e))
                err.code = e.code
                raise err
        self.handlers[proto.METHOD_APP_START_TASK] = app_start_task

    async def on_request(self, payload: dict) -> None:
        send = self.session._send_rpc
        try:
            proto.check_rpc(payload)
        except proto.ProtoError as e:
            if "id" in payload:
                await send(proto.rpc_error(payload.get("id"), proto.RPC_INVALID_PARAMS, str(e)))
            return
        handler = self.handlers.get(payload["method"])
        if handler is None:
            if "id" in payload:
                await send(proto.rpc_error(payload["id"], proto.RPC_METHOD_NOT_FOUND,
                                           "method %s is not served here" % payload["method"]))
            return
        self.session.spawn(self._serve(handler, payload))

    async def _serve(self, handler, payload):
        try:
            reply = proto.rpc_result(payload.get("id"), await handler(payload.get("params") or {}))
        except proto.ProtoError as e:
            reply = proto.rpc_error(payload.get("id"), getattr(e, "code", proto.RPC_INVALID_PARAMS), str(e))
        except Exception as e:
            log.exception("[%s] %s failed", self.session.device_id, payload["method"])
            reply = proto.rpc_error(payload.get("id"), proto.RPC_INTERNAL_ERROR, "server error: %s" % e)
        if "id" in payload:
            await self.session._send_rpc(reply)
