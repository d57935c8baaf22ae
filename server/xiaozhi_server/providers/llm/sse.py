"""Server-sent events of a Chat Completions stream, read from the raw HTTP body.

The `openai` client turns every SSE chunk into a pydantic model and
validates the request through its typed parameters; at 100 sessions that
was a fifth of the event loop's time (py-spy) for a few bytes of text per
chunk. `sse_data(body)` yields each event's `data` field as text, and
`ChunkReader.feed(obj)` turns one parsed chunk (a plain dict) into
llm.events, so nothing is built per chunk that is not sent on.

Lines end with LF, CRLF or CR (the SSE format); `event:`, `id:`, `retry:`
and comments are skipped: a chat stream carries everything in `data:`.
"""
from .events import ToolCall


async def sse_data(body):
    """Each event's data lines joined by newlines, from an async byte iterator."""
    pending = b""
    data = []
    async for chunk in body:
        if not chunk:
            continue
        lines = (pending + chunk).splitlines(True)
        # An unterminated last line waits for the next chunk; so does a
        # final CR, whose LF may be the next chunk's first byte.
        pending = b"" if lines[-1].endswith(b"\n") else lines.pop()
        for line in lines:
            if _take(line, data):
                yield "\n".join(data)
                data.clear()
    if pending:
        _take(pending, data)
    if data:
        yield "\n".join(data)


def _take(line, data):
    """Add a data line to `data`; True at the blank line that ends an event."""
    line = line.rstrip(b"\r\n")
    if not line:
        return bool(data)
    if line.startswith(b"data:"):
        value = line[5:]
        data.append((value[1:] if value.startswith(b" ") else value).decode())
    return False


class _ToolCallParts:
    __slots__ = ("id", "name", "args")

    def __init__(self):
        self.id = ""
        self.name = ""
        self.args = []


class StreamError(ValueError):
    """The stream itself reported an error (a chunk with an `error` member)."""


class ChunkReader:
    """Turns `chat.completion.chunk` dicts into TextDelta texts and whole ToolCalls."""

    def __init__(self):
        self.finish = None
        self._parts = {}

    def feed(self, obj, out):
        """Append this chunk's events to `out`: str for text, ToolCall for a finished call."""
        if not isinstance(obj, dict):
            raise ValueError("a stream chunk is not a JSON object")
        error = obj.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else None
            if not isinstance(message, str) or not message:
                message = "the model's stream reported an error"
            raise StreamError(message)
        for choice in obj.get("choices") or ():
            delta = choice.get("delta")
            if delta:
                text = delta.get("content")
                if text:
                    out.append(text)
                calls = delta.get("tool_calls")
                if calls:
                    self._add(calls)
            reason = choice.get("finish_reason")
            if reason:
                self.finish = reason
                self.finished_calls(out)

    def _add(self, deltas):
        """Merge one chunk's tool-call fragments (by index)."""
        parts = self._parts
        for d in deltas:
            index = d.get("index")
            if index is None:
                index = len(parts)
            p = parts.get(index)
            if p is None:
                p = parts[index] = _ToolCallParts()
            if d.get("id"):
                p.id = d["id"]
            fn = d.get("function")
            if fn:
                if fn.get("name") and not p.name:
                    p.name = fn["name"]
                if fn.get("arguments"):
                    p.args.append(fn["arguments"])

    def finished_calls(self, out):
        parts = self._parts
        for index in sorted(parts):
            p = parts[index]
            out.append(ToolCall(p.id or "call_%d" % index, p.name, "".join(p.args)))
        parts.clear()
