"""Events an LLM provider's `stream_chat()` yields, in order.

Zero or more `TextDelta` and `ToolCall`, then exactly one of `Done` or
`LlmError`. Tool calls are yielded whole (id, name, parsed arguments),
once the model has finished sending their pieces. `kind` tells them apart
(a Literal, so the type checker narrows `ev.kind == "text"` as isinstance).
"""
from typing import Literal


class TextDelta:
    __slots__ = ("text",)
    kind: Literal["text"] = "text"

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self):
        return "TextDelta(%r)" % self.text


class ToolCall:
    """`arguments` is the parsed JSON object, or None when `raw_arguments` was not valid JSON."""

    __slots__ = ("id", "name", "arguments", "raw_arguments", "error")
    kind: Literal["tool_call"] = "tool_call"

    def __init__(self, id: str, name: str, raw_arguments: str) -> None:
        import json
        self.id = id
        self.name = name
        self.raw_arguments = raw_arguments
        self.error: str | None = None
        self.arguments: dict | None
        try:
            args = json.loads(raw_arguments) if raw_arguments.strip() else {}
            if not isinstance(args, dict):
                raise ValueError("arguments are not a JSON object")
            self.arguments = args
        except ValueError as exc:
            self.arguments = None
            self.error = "invalid tool arguments: %s" % exc

    def __repr__(self):
        return "ToolCall(%r, %r, %r)" % (self.id, self.name, self.arguments)


class Done:
    __slots__ = ("finish_reason",)
    kind: Literal["done"] = "done"

    def __init__(self, finish_reason: str | None) -> None:
        self.finish_reason = finish_reason

    def __repr__(self):
        return "Done(%r)" % self.finish_reason


class LlmError:
    """`reason` is one of: timeout, http, connection, bad_response, not_configured."""

    __slots__ = ("reason", "message", "status")
    kind: Literal["error"] = "error"

    def __init__(self, reason: str, message: str, status: int | None = None) -> None:
        self.reason = reason
        self.message = message
        self.status = status

    def __repr__(self):
        return "LlmError(%r, %r, status=%r)" % (self.reason, self.message, self.status)
