"""The offline chat model: a small GGUF model run by llama.cpp on this node.

The default LLM when no OpenAI-compatible endpoint is configured and set-up
(`make run`) has prepared the model (local_model.py). One host process per
node holds the model (llama_host.py); every process serving sessions
talks to it on loopback, in the Chat Completions format, so the streaming,
timeouts and barge-in of the OpenAI provider apply unchanged (it is used
inside, pointed at the host).

A 1.5B model does not call tools reliably in its own format, so a turn
with tools first asks a *decision* under a grammar (decision.py). A call
is yielded as a ToolCall, as an OpenAI model's would be; the dialogue runs
it and asks again with the result, and then the model answers in words. A
decision is not asked after a tool result: one call per turn keeps a small
model from looping.

Prompt order, so the host's KV cache is reused: the dialogue's system
prompt (the same for every child in an app, the memory at its end), the
tool list with the decision's instruction (the same for a device), the
history written as the host read it, then this turn's facts (the time,
when it changed), the child's words and the answer's language.

Config keys: `model` (a name in local_model.MODELS, or a path to a GGUF
file), `slots` (turns the host decodes at once; default: one per core, at
most 4), `threads` (reading the prompt; writing uses one fewer; default: the cores), `context` (tokens per slot,
default 2048), `max_tokens` (per answer, default 100), `temperature`
(default 0.3), `first_token_timeout`, `chunk_timeout`, `system_prompt` (read
into every slot at start; services hands in the agent prompt, `prompts.agent`),
`url` (a llama.cpp server already running, e.g. on a bigger machine: no
host is started here, and the model is the one it serves).
"""
from __future__ import annotations

import asyncio
import datetime
import difflib
import itertools
import json
import logging
import os
import pathlib
import re
from typing import Any

from ...text.lang import language_of
from . import decision, local_model
from .events import Done, LlmError, TextDelta, ToolCall
from .openai import OpenAiLlm
from ..registry import register

log = logging.getLogger(__name__)

# Said when every slot is busy, so the child hears the companion while the turn waits its place.
BUSY_LINE = {"en": "Let me think.", "zh": "让我想一想。"}



# Said only when the answer came as JSON that is no call, or as the question again.
WORDS = "Answer the child in words, not JSON and not the question again: one or two short spoken sentences."
_SENTENCE_END = re.compile(r"[。？！?!.\n]")


def _says_back(sentence: str, words: str) -> bool:
    """The sentence is the child's question again, near enough (天空为什么是蓝色的 for
    天为什么是蓝色的); an answer shares far less (恐龙吃植物 with 恐龙吃什么: 0.6)."""
    said = _bare(sentence)
    return bool(said and words) and difflib.SequenceMatcher(None, said, words).ratio() >= 0.8


def _bare(text: str) -> str:
    """Letters and digits only, lower case: a question said back, whatever its marks."""
    return "".join(c.lower() for c in text if c.isalnum())

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


# A tool's result, as a note from the system in the child's language. As the child's words
# ("[tool result] true") the 1.5B answered "I don't know how to answer that"; "tell the child
# what you did" came out as "You turned the volume up."; a call written as the assistant's own
# "[I called X]" was copied into a later answer, spoken.
TOOL_NOTE = {"en": 'You called %s and it returned: %s. Now tell the child in one short sentence what you did '
                   'or found, as "I ...".',
             "zh": "你调用了 %s，结果是：%s。现在用一句简短的中文告诉孩子你做了什么或查到了什么。"}


def plain_history(messages: list[dict]) -> list[dict]:
    """The dialogue's messages with each tool call and its result as one
    plain note: a small model reads that better than a format it was not
    tuned on. The same messages always give the same text (the host's
    cache finds past turns by it)."""
    out: list[dict] = []
    calls: dict[str, str] = {}
    language = "en"
    for m in messages:
        if m.get("role") == "user":
            language = language_of(str(m.get("content") or ""))
        if m.get("role") == "assistant" and m.get("tool_calls"):
            for c in m["tool_calls"]:
                calls[str(c.get("id"))] = "%s(%s)" % (c["function"]["name"], c["function"].get("arguments") or "{}")
            text = (m.get("content") or "").strip()
            if text:
                out.append({"role": "assistant", "content": text})
        elif m.get("role") == "tool":
            note = TOOL_NOTE["zh" if language == "zh" else "en"]
            out.append({"role": "system", "content": note % (calls.get(str(m.get("tool_call_id")), "a tool"),
                                                             str(m.get("content") or "")[:400])})
        else:
            out.append({"role": m["role"], "content": m.get("content") or ""})
    return out


def _said_in(language: str) -> str:
    return "Answer in %s." % ("Chinese (简体中文)" if language == "zh" else "English")


def time_line(now: datetime.datetime) -> str:
    # Worded as context: "It is now ..." alone was read out as the answer after a tool call.
    # Every digit is a token: "4:28 AM, Sunday 6 December" is ~11, "04:28 2026-12-06" ~16.
    return "Time, if asked: %d:%s, %s %d %s." % (now.hour % 12 or 12, now.strftime("%M %p"), now.strftime("%A"),
                                                 now.day, now.strftime("%B"))


class TurnLines:
    """The lines each child's message was asked with, so a later turn writes
    the history as the host read it and finds it in its cache: the time
    (only when it changed since the last one the conversation was told:
    ~20 tokens, 0.4 s of reading on 2 cores) and the answer's language.
    Keyed by the words, shared by the node's sessions (a clash costs only a
    cache miss); the oldest go beyond `keep`."""

    def __init__(self, keep: int = 512):
        self.keep = keep
        self._lines: dict[str, tuple[str | None, str]] = {}

    def now(self, words: str, language: str, told: str | None) -> tuple[str | None, str]:
        """This turn's lines; `told`: the last time line in the conversation."""
        line = time_line(datetime.datetime.now())
        lines = (None if line == told else line, _said_in(language))
        self._lines.pop(words, None)
        self._lines[words] = lines
        while len(self._lines) > self.keep:
            self._lines.pop(next(iter(self._lines)))
        return lines

    def then(self, words: str) -> tuple[str | None, str]:
        return self._lines.get(words) or (None, _said_in(language_of(words)))


@register("llm", "local")
class LocalLlm:
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("model", "slots", "threads", "context", "max_tokens", "temperature",
               "first_token_timeout", "chunk_timeout", "system_prompt", "url")

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
        self._lines = TurnLines()
        self._slots_of: dict = {}               # conversation -> its host slot
        self._next_slot = itertools.count()

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
        if self.config.get("url"):     # a llama.cpp server run by someone else: used as it is
            return {"url": str(self.config["url"]).rstrip("/"), "slots": self.slots}
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

    async def prepare(self, messages: list[dict], tools: list[dict] | None, conversation=None) -> None:
        """Read a session's head (system prompt, tool list, history) into its
        slot now, so its first question finds it cached. Skipped while every
        slot decodes: children already talking come first."""
        await self._host()
        pin = self._pin(conversation)
        if await self._busy(pin):
            return
        head = self._prompt(messages, tools, "en")
        # Up to the last of the server's own lines (an opener, a re-invite): the host
        # refuses two assistant messages at the end (HTTP 400) and reads one as a begun reply.
        while head and head[-1]["role"] == "assistant":
            head.pop()
        body = dict({"messages": head, "max_tokens": 1, "cache_prompt": True}, **pin)
        r = await self._http.post("/v1/chat/completions", json=body)
        if r.status_code != 200:
            log.warning("local model: reading a session's head was refused (%s): %s", r.status_code, r.text[:300])

    def _pin(self, conversation) -> dict:
        """The host slot a conversation keeps (`id_slot`), given in turn to
        new conversations. Left to the host, every conversation went to the
        slot holding the longest common head, each child's turn pushed the
        last child's conversation out, and two children at once meant one
        of them reading ~430 tokens anew (5 s). A pinned slot that is busy
        makes the turn wait for it, as a full host would."""
        if conversation is None:
            return {}
        slot = self._slots_of.pop(conversation, None)
        if slot is None:
            slot = next(self._next_slot) % self.slots
        self._slots_of[conversation] = slot       # most recent last
        while len(self._slots_of) > 4096:
            self._slots_of.pop(next(iter(self._slots_of)))
        return {"id_slot": slot}

    async def _busy(self, pin: dict | None = None) -> bool:
        """This turn will wait in the host's queue: its pinned slot (or, not
        pinned, every slot) is decoding another turn."""
        try:
            r = await self._http.get("/slots")
            slots = r.json()
            if pin and "id_slot" in pin:
                return any(s.get("id") == pin["id_slot"] and s.get("is_processing") for s in slots)
            ours = [s for s in slots if s.get("id", 0) < self.slots]     # not the translator's
            return bool(ours) and all(s.get("is_processing") for s in ours)
        except Exception:
            return False

    def _prompt(self, messages: list[dict], tools: list[dict] | None, language: str,
                after_tool: bool = False) -> list[dict]:
        """The answer's prompt; the decision's is this and its own two lines.

        Every past turn is written as it was when it was asked, its time
        line and answer line included, so the host's cache holds the whole
        conversation and a turn reads only its own lines (~40 tokens, where
        a history that differed from what the host had read cost ~80, over
        a second on 2 cores). The answer's prompt is the head of the
        decision's: after a `none` it is read from the cache at once."""
        system = [m for m in messages if m.get("role") == "system"]
        rest = plain_history([m for m in messages if m.get("role") != "system"])
        out = list(system)
        if tools:
            # The decision's instruction sits with the tool list, in the prefix the host keeps.
            out.append({"role": "system", "content": tool_list(tools) + "\n" + decision.instruction(tools)})
        last_user = max((i for i, m in enumerate(rest) if m["role"] == "user"), default=None)
        told = None
        for i, m in enumerate(rest):
            if m["role"] == "user":
                # This turn's facts go just before the child's words, after everything cached
                # (a system line: inside the child's message a small model read it out).
                # The agent prompt's "the language the child used" is not enough for a 1.5B after an
                # English tool list (it answered 恐龙吃什么？ in English): said once more, after the words.
                time_now, said_in = (self._lines.now(m["content"], language, told)
                                     if i == last_user and not after_tool else self._lines.then(m["content"]))
                if time_now:
                    out.append({"role": "system", "content": time_now})
                    told = time_now
                out += [m, {"role": "system", "content": said_in}]
            else:
                out.append(m)
        return out

    async def _decide(self, prompt: list[dict], tools: list[dict], pin: dict) -> tuple[str, dict] | None:
        """(tool, args), or None to answer in words.

        First one token: `none` is a single token, and most turns are words,
        so the answer starts after one token, not after `none"}` and the end
        (~0.3 s on 2 cores). A call is then written whole by a second request
        whose prompt the host has just read (it costs one token more). Not
        streamed and left at `none` instead: the slot stays busy until the
        host notices, and the answer then goes to the other slot, which has
        the conversation to read anew."""
        body = dict({"messages": prompt + [{"role": "assistant", "content": decision.OPENING}],
                     "max_tokens": 1, "temperature": 0, "grammar": decision.grammar(tools), "cache_prompt": True},
                    **pin)
        written = await self._complete(body)
        if written is None or written.startswith("none"):
            return None
        written = await self._complete(dict(body, max_tokens=200))
        call = decision.parse_call(decision.OPENING + (written or ""), tools)
        if call is None and not (written or "").startswith("none"):   # `none` in two tokens: words
            log.warning("local model: the tool decision is not a call: %r", (written or "")[:200])
        return call

    async def _complete(self, body: dict) -> str | None:
        """What the model wrote after the begun reply; None if the host refused."""
        r = await self._http.post("/v1/chat/completions", json=body)
        if r.status_code != 200:
            log.warning("local model: the tool decision was refused (%s): %s", r.status_code, r.text[:300])
            return None
        written = r.json()["choices"][0]["message"].get("content") or ""
        # The host echoes the begun reply: what the model wrote follows it.
        return written[len(decision.OPENING):] if written.startswith(decision.OPENING) else written

    async def stream_chat(self, messages, tools=None, language=None, conversation=None, **_ignored):
        import httpx2
        try:
            await self._host()
        except Exception as e:
            yield LlmError("not_configured", "the local model could not start: %s" % e)
            return
        lang = language or language_of(next((m.get("content") or "" for m in reversed(messages)
                                             if m.get("role") == "user" and isinstance(m.get("content"), str)), ""))
        pin = self._pin(conversation)
        if await self._busy(pin):
            yield TextDelta(BUSY_LINE.get(lang, BUSY_LINE["en"]) + " ")
        after_tool = bool(messages) and messages[-1].get("role") == "tool"
        # The tool list stays in the prompt after a call too: the cached prefix is the same.
        prompt = self._prompt(messages, tools, lang, after_tool)
        if tools and not after_tool:
            for attempt in (0, 1):
                try:
                    # Not the answer's language line: after the child's words it turned
                    # 我们来聊天吧 and "let's translate" into no call.
                    call = await self._decide(prompt[:-1], tools, pin)
                    break
                except httpx2.TransportError as e:
                    if attempt:
                        yield LlmError("connection", "the local model host: %s" % e)
                        return
                    await self._host(restart=True)     # its starter is gone: this process starts one
            if call is not None:
                yield ToolCall("local-%d" % next(_ids), call[0], json.dumps(call[1], ensure_ascii=False))
                yield Done("tool_calls")
                return
        assert self._inner is not None
        # The answer is held at its start, for two things a 1.5B does. Asked to tell about
        # themselves ("my name is Lily") it may pick `none` at the decision and then write the
        # remember call as its answer: a call to an offered tool is yielded as one. And it may
        # say a Chinese question back before (or instead of) answering it: that sentence is
        # dropped. Anything else is passed on once it is clearly neither.
        # After a tool's result it may write a call again (copying the note): no call is taken
        # then (no loop of calls), and the answer is asked for in words at once.
        words = "" if after_tool else _bare(next((str(m.get("content") or "") for m in reversed(messages)
                                                  if m.get("role") == "user"), ""))
        held: str | None = ""
        echo_checked = not words
        stream = self._inner.stream_chat(prompt, None, extra_body=pin)
        async for ev in stream:
            if ev.kind == "error" and ev.reason == "connection":
                self._state = None      # the next turn finds or starts a host
            if held is not None and ev.kind == "text":
                held += ev.text
                if after_tool and held.lstrip().startswith("{"):
                    await stream.aclose()       # ends the host's generation of it
                    break
                if not _bare(held) or (tools and held.lstrip().startswith("{")):
                    continue
                if not echo_checked:
                    end = _SENTENCE_END.search(held)
                    if end is None and len(_bare(held)) <= len(words):
                        continue        # it may yet be the question said back
                    echo_checked = True
                    if end is not None and _says_back(held[:end.end()], words):
                        held = held[end.end():]
                        continue
                ev, held = TextDelta(held), None
            elif held is not None and ev.kind == "done":
                call = decision.parse_call(held, tools) if tools and not after_tool else None
                if call is not None:
                    yield ToolCall("local-%d" % next(_ids), call[0], json.dumps(call[1], ensure_ascii=False))
                    yield Done("tool_calls")
                    return
                if _bare(held) and not _says_back(held, words) and not held.lstrip().startswith("{"):
                    yield TextDelta(held)       # a short answer, over before it was passed on
                    yield ev
                    return
                break
            yield ev
        else:
            return
        # Nothing to say: JSON that is no call, or only the question said back.
        log.info("local model: an answer that is no answer: %r", (held or "")[:200])
        async for again in self._inner.stream_chat(prompt + [{"role": "system", "content": WORDS}], None,
                                                   extra_body=pin):
            yield again
