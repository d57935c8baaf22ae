"""The offline chat model: a small GGUF model run by llama.cpp on this node.

The default LLM when no OpenAI-compatible endpoint is configured and set-up
(`make run`) has prepared the model (local_model.py). One host process per
node holds the model (llama_host.py); every process serving sessions
talks to it on loopback, in the Chat Completions format, so the streaming,
timeouts and barge-in of the OpenAI provider apply unchanged (it is used
inside, pointed at the host).

A 1.5B model does not call tools reliably in its own format, so a turn
with tools first asks a *decision* under a JSON schema (a grammar at
sampling time): `{"tool": "none"}` (answer in words), or `{"tool": NAME,
"args": {...}}` where each tool's arguments follow its own input schema.
A call is yielded as a ToolCall, as an OpenAI model's would be; the
dialogue runs it and asks again with the result, and then the model
answers in words. A decision is not asked after a tool result: one call
per turn keeps a small model from looping.

Prompt order, so the host's KV cache is reused: the dialogue's system
prompt (the same for every child in an app, the memory at its end), the
tool list with the decision's instruction (the same for a device), the history, then this turn's facts
(the time) with the child's words.

Config keys: `model` (a name in local_model.MODELS, or a path to a GGUF
file), `slots` (turns the host decodes at once; default: one per core, at
most 4), `threads` (reading the prompt; writing uses one fewer; default: the cores), `context` (tokens per slot,
default 2048), `max_tokens` (per answer, default 100), `temperature`
(default 0.3), `first_token_timeout`, `chunk_timeout`, `system_prompt` (read
into every slot at start; services hands in the agent prompt, `prompts.agent`).
"""
from __future__ import annotations

import asyncio
import datetime
import itertools
import json
import logging
import os
import pathlib
from typing import Any

from ...text.lang import language_of
from . import local_model
from .events import Done, LlmError, TextDelta, ToolCall
from .openai import OpenAiLlm
from ..registry import register

log = logging.getLogger(__name__)

# Said when every slot is busy, so the child hears the companion while the turn waits its place.
BUSY_LINE = {"en": "Let me think.", "zh": "让我想一想。"}

DECIDE = ("When asked for a decision: which tool does the child's last message ask for? If it asks to change a device setting, "
          "to change what you are doing (chat, a lesson, translation) or tells something to remember, "
          'reply with the call as JSON: {"tool": name, "args": {...}}. If no tool is needed, '
          'reply {"tool": "none"}: a question about the world (what, why, how many) or a chat needs no tool.')

# After the tool list (in the cached prefix), the answer step says it wants words, not a call.
ANSWER = "Now answer the child in words: one or two short spoken sentences in the child's language, no JSON."

_ids = itertools.count(1)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _short(text: str, limit: int = 140) -> str:
    text = " ".join((text or "").split())
    first = text.split(". ")[0]
    return (first if len(first) <= limit else first[:limit - 1] + "…")


def tool_list(tools: list[dict]) -> str:
    """One line per tool: name, what it does, its arguments."""
    lines = ["Tools you can call:"]
    for t in tools:
        f = t.get("function") or {}
        props = ((f.get("parameters") or {}).get("properties") or {})
        args = ", ".join("%s%s" % (k, (" (%s)" % _short(v.get("description", ""), 60)) if v.get("description") else "")
                         for k, v in props.items())
        lines.append("- %s(%s): %s" % (f.get("name"), args, _short(f.get("description", ""))))
    # Examples of questions and chat that need no tool: a small model otherwise reaches for one.
    lines.append("Call a tool only when the child asks for what it does; questions (how many legs does a cat "
                 "have? why is the sky blue? 太阳为什么是热的？) and chat need none.")
    return "\n".join(lines)


def decision_schema(tools: list[dict]) -> dict:
    """A JSON schema with one branch per tool, its arguments under the tool's
    own schema, and `{"tool": "none"}` to answer in words. The tool's name
    comes first: the model picks what to do before how."""
    branches: list[dict[str, Any]] = []
    for t in tools:
        f = t.get("function") or {}
        params = dict(f.get("parameters") or {"type": "object", "properties": {}})
        params.setdefault("type", "object")
        params.setdefault("properties", {})
        branches.append({"type": "object", "properties": {"tool": {"const": f.get("name")}, "args": params},
                         "required": ["tool", "args"], "additionalProperties": False})
    branches.append({"type": "object", "properties": {"tool": {"const": "none"}},
                     "required": ["tool"], "additionalProperties": False})
    # Compact JSON: every space the model writes is a token it decodes (llguidance's own key).
    return {"anyOf": branches, "x-guidance": {"whitespace_flexible": False}}


def plain_history(messages: list[dict]) -> list[dict]:
    """The dialogue's messages with tool calls and results as plain text: a
    small model reads 'I called X' better than a format it was not tuned on."""
    out = []
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            calls = "; ".join("%s(%s)" % (c["function"]["name"], c["function"].get("arguments") or "{}")
                              for c in m["tool_calls"])
            text = (m.get("content") or "").strip()
            out.append({"role": "assistant", "content": (text + " " if text else "") + "[I called " + calls + "]"})
        elif m.get("role") == "tool":
            # As a note from the system: as the child's words ("[tool result] true") the 1.5B
            # answered "I don't know how to answer that".
            out.append({"role": "system", "content": "The tool ran and returned: %s. Tell the child in one short "
                        "sentence what you did." % str(m.get("content") or "")[:400]})
        else:
            out.append({"role": m["role"], "content": m.get("content") or ""})
    return out


def _now_line() -> str:
    # Worded as context: "It is now ..." alone was read out as the answer after a tool call.
    return datetime.datetime.now().strftime("(Context, say it only if the child asks: the local time is %H:%M "
                                            "on %A, %Y-%m-%d.)")


@register("llm", "local")
class LocalLlm:
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("model", "slots", "threads", "context", "max_tokens", "temperature",
               "first_token_timeout", "chunk_timeout", "system_prompt")

    def __init__(self, config):
        self.config = config
        name = config.get("model") or local_model.DEFAULT_MODEL
        self.model = name if name in local_model.MODELS else pathlib.Path(name).name
        self._model_name = name
        self.threads = int(config.get("threads") or cores())
        self.slots = int(config.get("slots") or max(1, min(4, cores())))
        self.context = int(config.get("context", 2048))
        self.max_tokens = int(config.get("max_tokens", 100))
        self.temperature = float(config.get("temperature", 0.3))
        self._state: dict | None = None
        self._inner: OpenAiLlm | None = None
        self._http = None
        self._starting: asyncio.Lock | None = None

    @property
    def banner(self) -> str:
        return "local %s (%d turns at once; more wait, hearing a short line)" % (self.model, self.slots)

    def _path(self) -> pathlib.Path:
        if self._model_name in local_model.MODELS:
            return local_model.model_path(self._model_name)
        return pathlib.Path(self._model_name)

    def _warm_prompts(self) -> list[list[dict]]:
        prompt = self.config.get("system_prompt")
        return [[{"role": "system", "content": prompt}]] if prompt else []

    def _start_host(self) -> dict:
        from .llama_host import ensure_host
        return ensure_host(self._path(), self.slots, self.threads, self.context, self._warm_prompts())

    async def _host(self, restart: bool = False) -> dict:
        from ...pools import run_blocking
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._state is None or restart:
                self._state = await run_blocking(self._start_host)
                url = self._state["url"]
                self._inner = OpenAiLlm({
                    "base_url": url + "/v1", "api_key": "none", "model": self.model,
                    "temperature": self.temperature, "max_tokens": self.max_tokens,
                    "first_token_timeout": float(self.config.get("first_token_timeout", 60)),
                    "chunk_timeout": float(self.config.get("chunk_timeout", 30)),
                    "timeout": 300, "extra_body": {"cache_prompt": True}})
                import httpx2
                self._http = httpx2.AsyncClient(base_url=url, timeout=300)
                self.slots = int(self._state.get("slots", self.slots))
        return self._state

    async def warm_up(self):
        """Start (or find) the node's model host before the first device."""
        await self._host()
        assert self._inner is not None
        await self._inner.warm_up()

    async def _busy(self) -> bool:
        """Every slot of the host is decoding: this turn will wait in its queue."""
        try:
            r = await self._http.get("/slots")
            slots = r.json()
            return bool(slots) and all(s.get("is_processing") for s in slots)
        except Exception:
            return False

    def _prompt(self, messages: list[dict], tools: list[dict] | None, facts: bool = True) -> list[dict]:
        system = [m for m in messages if m.get("role") == "system"]
        rest = plain_history([m for m in messages if m.get("role") != "system"])
        out = list(system)
        if tools:
            # The decision's instruction sits with the tool list, in the prefix the host keeps:
            # after the child's words it was ~75 tokens read anew every turn (~1 s on 2 cores).
            out.append({"role": "system", "content": tool_list(tools) + "\n" + DECIDE})
        # This turn's facts go just before the child's words, after everything cached
        # (a system line: inside the child's message a small model read it out).
        last_user = max((i for i, m in enumerate(rest) if m["role"] == "user"), default=None)
        if last_user is not None and facts:
            rest.insert(last_user, {"role": "system", "content": _now_line()})
        return out + rest

    async def _decide(self, prompt: list[dict], tools: list[dict]) -> dict | None:
        body = {"messages": prompt + [{"role": "system", "content": "Decision as JSON:"}], "max_tokens": 200,
                "temperature": 0, "json_schema": decision_schema(tools), "cache_prompt": True}
        r = await self._http.post("/v1/chat/completions", json=body)
        if r.status_code != 200:
            log.warning("local model: the tool decision was refused (%s): %s", r.status_code, r.text[:300])
            return None
        text = r.json()["choices"][0]["message"].get("content") or ""
        try:
            decision = json.loads(text)
        except ValueError:
            log.warning("local model: the tool decision is not JSON: %r", text[:200])
            return None
        return decision if isinstance(decision, dict) else None

    async def stream_chat(self, messages, tools=None, language=None, **_ignored):
        import httpx2
        try:
            await self._host()
        except Exception as e:
            yield LlmError("not_configured", "the local model could not start: %s" % e)
            return
        lang = language or language_of(next((m.get("content") or "" for m in reversed(messages)
                                             if m.get("role") == "user" and isinstance(m.get("content"), str)), ""))
        if await self._busy():
            yield TextDelta(BUSY_LINE.get(lang, BUSY_LINE["en"]) + " ")
        after_tool = bool(messages) and messages[-1].get("role") == "tool"
        # The tool list stays in the prompt after a call too: the cached prefix is the same.
        # After a tool result the model tells what the tool did: no facts to wander off to.
        prompt = self._prompt(messages, tools, facts=not after_tool)
        if tools and not after_tool:
            offered = tools
            for attempt in (0, 1):
                try:
                    decision = await self._decide(prompt, offered)
                    break
                except httpx2.TransportError as e:
                    if attempt:
                        yield LlmError("connection", "the local model host: %s" % e)
                        return
                    await self._host(restart=True)     # its starter is gone: this process starts one
            if decision and decision.get("tool") not in (None, "none"):
                yield ToolCall("local-%d" % next(_ids), decision["tool"],
                               json.dumps(decision.get("args") or {}, ensure_ascii=False))
                yield Done("tool_calls")
                return
        # The agent prompt's "the language the child used" is not enough for a 1.5B after an English
        # tool list: it answered 恐龙吃什么？ in English. Said once more, last, in the answer step only
        # (before the decision it turned "turn the volume up" into no call).
        said_in = "Answer in %s." % ("Chinese (简体中文)" if lang == "zh" else "English")
        prompt = prompt + [{"role": "system", "content": (ANSWER + " " + said_in) if tools else said_in}]
        assert self._inner is not None
        async for ev in self._inner.stream_chat(prompt, None):
            if ev.kind == "error" and ev.reason == "connection":
                self._state = None      # the next turn finds or starts a host
            yield ev
