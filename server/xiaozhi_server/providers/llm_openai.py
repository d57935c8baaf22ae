"""Any OpenAI-compatible chat endpoint, streamed, with tool calls.

Config keys (each falls back to the environment the `openai` client uses):
`base_url` (OPENAI_BASE_URL), `api_key` (OPENAI_API_KEY), `model`
(OPENAI_MODEL, default gpt-4o-mini), `temperature`, `max_tokens`,
`timeout` (seconds for the whole request, default 60),
`first_token_timeout` (seconds until the first chunk, default 15),
`chunk_timeout` (longest gap between chunks, default 20), `extra_body`.

`stream_chat(messages, tools)` is an async generator of llm_events. It
never raises for a failed request: timeouts, HTTP and connection errors
come out as a final `LlmError`. Cancelling the consuming task, or closing
the generator (`contextlib.aclosing`), closes the HTTP stream at once, so
a barge-in stops the model's billing too.
"""
import asyncio
import os

from .llm_events import Done, LlmError, TextDelta, ToolCall
from .registry import register

DEFAULT_MODEL = "gpt-4o-mini"


class _ToolCallParts:
    __slots__ = ("id", "name", "args")

    def __init__(self):
        self.id = ""
        self.name = ""
        self.args = []


def _add_tool_deltas(parts, deltas):
    """Merge one chunk's tool-call fragments into `parts` (by index)."""
    for d in deltas:
        index = d.index if d.index is not None else len(parts)
        p = parts.get(index)
        if p is None:
            p = parts[index] = _ToolCallParts()
        if d.id:
            p.id = d.id
        fn = d.function
        if fn is not None:
            if fn.name and not p.name:
                p.name = fn.name
            if fn.arguments:
                p.args.append(fn.arguments)


def _finished_calls(parts):
    calls = []
    for index in sorted(parts):
        p = parts[index]
        calls.append(ToolCall(p.id or "call_%d" % index, p.name, "".join(p.args)))
    parts.clear()
    return calls


@register("llm", "openai")
class OpenAiLlm:
    def __init__(self, config):
        self.config = config
        self.model = config.get("model") or os.environ.get("OPENAI_MODEL") or DEFAULT_MODEL
        self.base_url = config.get("base_url") or os.environ.get("OPENAI_BASE_URL")
        self.api_key = config.get("api_key") or os.environ.get("OPENAI_API_KEY") or "none"
        self.timeout = float(config.get("timeout", 60))
        self.first_token_timeout = float(config.get("first_token_timeout", 15))
        self.chunk_timeout = float(config.get("chunk_timeout", 20))
        self._client = None

    def client(self):
        if self._client is None:
            from openai import AsyncOpenAI
            # Retries would hide a dead endpoint behind long silence: the
            # caller falls back to a spoken error line instead.
            self._client = AsyncOpenAI(base_url=self.base_url, api_key=self.api_key,
                                       timeout=self.timeout, max_retries=0)
        return self._client

    async def warm_up(self):
        """Import the client library and build the client now, in the pool: on
        the event loop the import alone stalls every session for about a second."""
        from .workers import run_blocking
        await run_blocking(self.client)

    def _request(self, messages, tools):
        req = {"model": self.model, "messages": messages, "stream": True}
        if tools:
            req["tools"] = tools
        for key in ("temperature", "max_tokens"):
            if key in self.config:
                req[key] = self.config[key]
        if self.config.get("extra_body"):
            req["extra_body"] = self.config["extra_body"]
        return req

    async def stream_chat(self, messages, tools=None, **_ignored):
        import openai
        stream = None
        try:
            # asyncio.timeout, not wait_for: the awaits run in this task, so a
            # cancellation reaches the HTTP stream's generators directly
            # instead of leaving them half-run in an orphaned inner task.
            try:
                async with asyncio.timeout(self.first_token_timeout):
                    stream = await self.client().chat.completions.create(**self._request(messages, tools))
            except TimeoutError:
                yield LlmError("timeout", "no answer from the model within %.0f s" % self.first_token_timeout)
                return
            parts = {}
            finish = None
            first = True
            it = stream.__aiter__()
            while True:
                wait = self.first_token_timeout if first else self.chunk_timeout
                try:
                    async with asyncio.timeout(wait):
                        chunk = await it.__anext__()
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    yield LlmError("timeout", "the model stopped sending for %.0f s" % wait)
                    return
                first = False
                for choice in chunk.choices or ():
                    delta = choice.delta
                    if delta is not None:
                        if delta.content:
                            yield TextDelta(delta.content)
                        if delta.tool_calls:
                            _add_tool_deltas(parts, delta.tool_calls)
                    if choice.finish_reason:
                        finish = choice.finish_reason
                        for call in _finished_calls(parts):
                            yield call
            # Some servers end the stream without a finish_reason.
            for call in _finished_calls(parts):
                yield call
            yield Done(finish or "stop")
        except openai.APITimeoutError as exc:
            yield LlmError("timeout", str(exc))
        except openai.APIStatusError as exc:
            yield LlmError("http", exc.message, exc.status_code)
        except openai.APIConnectionError as exc:
            yield LlmError("connection", str(exc))
        except (openai.APIError, ValueError, AttributeError) as exc:
            yield LlmError("bad_response", str(exc))
        finally:
            if stream is not None:
                await stream.close()
