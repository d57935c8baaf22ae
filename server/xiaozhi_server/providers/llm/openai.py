"""Any OpenAI-compatible chat endpoint, streamed, with tool calls.

Config keys (each falls back to the environment the `openai` client uses):
`base_url` (OPENAI_BASE_URL), `api_key` (OPENAI_API_KEY), `model`
(OPENAI_MODEL, default gpt-4o-mini), `temperature`, `max_tokens`,
`timeout` (seconds for the whole request, default 60),
`first_token_timeout` (seconds until the first chunk, default 15),
`chunk_timeout` (longest gap between chunks, default 20), `extra_body`.

`stream_chat(messages, tools)` is an async generator of llm.events. It
never raises for a failed request: timeouts, HTTP and connection errors
come out as a final `LlmError`. Cancelling the consuming task, or closing
the generator (`contextlib.aclosing`), closes the HTTP stream at once, so
a barge-in stops the model's billing too.
"""
import asyncio
import json
import os

from .events import Done, LlmError, TextDelta
from .sse import ChunkReader, StreamError, sse_data
from ..registry import register

DEFAULT_MODEL = "gpt-4o-mini"


@register("llm", "openai")
class OpenAiLlm:
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("model", "base_url", "api_key", "timeout", "first_token_timeout", "chunk_timeout",
               "temperature", "max_tokens", "extra_body")

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
        from ...pools import run_blocking
        await run_blocking(self.client)

    def _request(self, messages, tools, extra_body=None):
        req = {"model": self.model, "messages": messages, "stream": True}
        if tools:
            req["tools"] = tools
        for key in ("temperature", "max_tokens"):
            if key in self.config:
                req[key] = self.config[key]
        if self.config.get("extra_body"):
            req.update(self.config["extra_body"])
        req.update(extra_body or {})
        return req

    async def _open(self, messages, tools, extra_body=None):
        """POST the request through the client (its auth, timeouts, HTTP
        pool and error types) and return the unread streaming HTTP response.

        Not `chat.completions.create`: it walks every message and tool
        schema through its typed parameters, then builds a pydantic model
        per SSE chunk, together a fifth of the event loop's time at 100
        sessions; the body we send is already plain JSON."""
        import httpx2   # the HTTP library the openai client is built on (its dependency)
        return await self.client().post("/chat/completions", cast_to=httpx2.Response,
                                        body=self._request(messages, tools, extra_body), stream=True,
                                        options={"headers": {"Accept": "text/event-stream"}})

    async def stream_chat(self, messages, tools=None, extra_body=None, **_ignored):
        """extra_body: keys added to this request's body (the local model pins its host's slot)."""
        import httpx2
        import openai
        response = None
        try:
            # asyncio.timeout, not wait_for: the awaits run in this task, so a
            # cancellation reaches the HTTP stream's generators directly
            # instead of leaving them half-run in an orphaned inner task.
            try:
                async with asyncio.timeout(self.first_token_timeout):
                    response = await self._open(messages, tools, extra_body)
            except TimeoutError:
                yield LlmError("timeout", "no answer from the model within %.0f s" % self.first_token_timeout)
                return
            reader = ChunkReader()
            out = []
            first = True
            events = sse_data(response.aiter_bytes())
            try:
                while True:
                    wait = self.first_token_timeout if first else self.chunk_timeout
                    try:
                        async with asyncio.timeout(wait):
                            data = await events.__anext__()
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        yield LlmError("timeout", "the model stopped sending for %.0f s" % wait)
                        return
                    first = False
                    if data.startswith("[DONE]"):
                        break
                    reader.feed(json.loads(data), out)
                    for ev in out:
                        yield TextDelta(ev) if type(ev) is str else ev
                    out.clear()
            finally:
                await events.aclose()
            # Some servers end the stream without a finish_reason.
            reader.finished_calls(out)
            for call in out:
                yield call
            yield Done(reader.finish or "stop")
        except openai.APITimeoutError as exc:
            yield LlmError("timeout", str(exc))
        except openai.APIStatusError as exc:
            yield LlmError("http", exc.message, exc.status_code)
        except openai.APIConnectionError as exc:
            yield LlmError("connection", str(exc))
        except (openai.APIError, StreamError, ValueError, AttributeError, TypeError) as exc:
            yield LlmError("bad_response", str(exc))
        except httpx2.TimeoutException as exc:
            yield LlmError("timeout", "%s: %s" % (type(exc).__name__, exc))
        except httpx2.HTTPError as exc:
            # Reading the body goes to the HTTP library directly: the client
            # maps its errors only while sending (a reset connection here).
            yield LlmError("connection", "%s: %s" % (type(exc).__name__, exc))
        finally:
            if response is not None:
                await response.aclose()
