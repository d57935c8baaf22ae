"""The answer a device gets when the server refuses one of its JSON messages.

A refused message that carries an id is a request whose sender waits for
an answer: it gets one at once, with that id, instead of waiting for its
own timeout. An MCP request (an `mcp` envelope whose payload has a method
and an id) gets a JSON-RPC error object in an `mcp` envelope; any other
message with a top-level id gets an `error` message (shared/protocol
ws/error.json). Nothing else is answered: a message without an id waits
for nothing, and JSON-RPC never answers an answer (an MCP payload without
a method); such an answer is handed back to the session so the call it
belongs to fails now rather than at its timeout.

An id the reply could not carry safely (not an integer, or not a string of
at most MAX_ID_CHARS valid characters) is answered as null, as JSON-RPC
asks for an id it could not detect.

Messages the rate limiter drops are never seen here, so a flood gets no
answers to amplify it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .. import protocol as proto

MAX_ID_CHARS = 128
MAX_REASON_CHARS = 500


@dataclass
class Refused:
    """What is known of a refused message that carried an id."""
    kind: str            # "mcp_request", "mcp_answer" or "message"
    id: Any              # the id as the reply carries it (None when unusable)
    request: str | None  # the message's type, when it was a usable string


def carried_id(text: str) -> Refused | None:
    """The id a refused message carried, or None when it carried none (or
    is not a JSON object at all). Parses again: this path is rare and
    bounded by the connection's message rate."""
    if '"id"' not in text:
        return None
    try:
        msg = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(msg, dict):
        return None
    t = msg.get("type")
    request = t if isinstance(t, str) and len(t) <= 64 and proto.json_error(t) is None else None
    payload = msg.get("payload")
    if request == "mcp" and isinstance(payload, dict) and "id" in payload:
        kind = "mcp_request" if "method" in payload else "mcp_answer"
        return Refused(kind, usable_id(payload["id"]), request)
    if "id" in msg:
        return Refused("message", usable_id(msg["id"]), request)
    return None


def usable_id(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and -2**53 < value < 2**53:
        return value
    if isinstance(value, str) and len(value) <= MAX_ID_CHARS and proto.json_error(value) is None:
        return value
    return None


def answer(refused: Refused, reason: str, session_id: str,
           rpc_code: int = proto.RPC_INVALID_REQUEST) -> dict | None:
    """The message that answers a refused request, or None for an answer
    (which is never answered)."""
    reason = _printable(reason)
    if refused.kind == "mcp_request":
        return proto.mcp(proto.rpc_error(refused.id, rpc_code, reason), session_id=session_id)
    if refused.kind == "message":
        msg = {"type": "error", "session_id": session_id, "id": refused.id, "reason": reason}
        if refused.request is not None:
            msg["request"] = refused.request
        return msg
    return None


def _printable(reason: str) -> str:
    # A reason may quote the message; what it quotes must still encode.
    reason = reason.encode("utf-8", "replace").decode("utf-8")
    return reason if len(reason) <= MAX_REASON_CHARS else reason[:MAX_REASON_CHARS - 3] + "..."


async def refuse(session: Any, text: str, reason: str, rpc_code: int = proto.RPC_INVALID_REQUEST) -> None:
    """Answer a refused message of `session`'s device that carried an id; a
    refused answer to one of our MCP calls fails that call now."""
    refused = carried_id(text)
    if refused is None:
        return
    if refused.kind == "mcp_answer":
        if refused.id is not None:
            session.mcp.on_payload({"id": refused.id, "error": {"message": "malformed answer: " + reason}})
        return
    reply = answer(refused, reason, session.id, rpc_code)
    if reply is not None:
        await session.send_json(reply)
