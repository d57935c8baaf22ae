"""The chat LLM side of a turn: history, system prompt, streaming, tool calls.

`reply(turn)` is an async iterator of sentences ready to speak. Text
deltas go through the sentence segmenter so the first sentence is spoken
while the model is still writing. Tool calls are executed through the
session's ToolTable (which enforces the app's tool policy) and their
results are fed back for another round, at most `max_rounds` times. A tool
outcome with end_turn (a task took over) ends the turn; its `say` line,
if any, is the last thing spoken.

`emotion` is set from the model's leading emoji once the first text
arrives; `on_emotion` is called with it once per turn.
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable

from .emotion import split_emotion
from ..text.lang import language_of
from ..text.lines import Lines
from .segmenter import SentenceSegmenter

if TYPE_CHECKING:
    from ..mcp.tools import Policy, ToolTable
    from ..providers.base import LlmProvider
    from ..providers.llm.events import LlmError
    from .reply import Turn

log = logging.getLogger(__name__)

_conversations = itertools.count(1)

class Dialogue:
    def __init__(self, llm: LlmProvider, tools: ToolTable, system_prompt: str, history_turns: int = 10,
                 max_rounds: int = 4, language: str = "zh", lines: Lines | None = None) -> None:
        self.llm = llm
        self.lines = lines if lines is not None else Lines.load()
        self.tools = tools
        self.system_prompt = system_prompt
        self.history: list[dict] = []
        self.history_turns = history_turns
        self.max_rounds = max_rounds
        self.language = language
        self.tool_policy: Policy = None      # None = every tool; else allowed names
        self.last_error: LlmError | None = None
        # Called each time the history grew by a turn (the conversation is kept elsewhere too).
        self.on_turn: Callable[[], None] | None = None
        # Which conversation a request belongs to (a model host keeps one per slot: llm/local.py).
        self.conversation = next(_conversations)

    def _messages(self, turn=()):
        return [{"role": "system", "content": self.system_prompt}] + self.history + list(turn)

    def _trim(self):
        # keep the last N user turns (a turn starts at a user message)
        starts = [i for i, m in enumerate(self.history) if m["role"] == "user"]
        if len(starts) > self.history_turns:
            self.history = self.history[starts[-self.history_turns]:]

    def _grew(self, turn: list[dict]) -> None:
        self.history.extend(turn)
        if self.on_turn is not None:
            self.on_turn()

    def add_assistant_line(self, text: str) -> None:
        """Something the server said on its own (an opener) joins the history."""
        self._grew([{"role": "assistant", "content": text}])

    async def prepare(self) -> None:
        """Let a model that keeps a prompt cache read the conversation's
        head (system prompt, tools, history) before the next turn asks."""
        prepare = getattr(self.llm, "prepare", None)
        if prepare is not None:
            try:
                await prepare(self._messages(), self.tools.declarations(self.tool_policy) or None,
                              conversation=self.conversation)
            except Exception as e:     # only a head start: the turn reads it anyway
                log.info("LLM prepare failed: %s", e)

    async def reply(self, heard: Turn, on_emotion: Callable[[str], Awaitable[None]] | None = None
                    ) -> AsyncIterator[str]:
        """The answer to the child's words. Tools run and the turn joins the
        history only once the words are final (heard.commit: a speculative
        turn the child went on from leaves no trace)."""
        user_text, gate = heard.text, heard.commit
        turn: list[dict[str, Any]] = [{"role": "user", "content": user_text}]
        self._trim()
        language = language_of(user_text)
        emotion_sent = False
        seg = SentenceSegmenter()
        for _round in range(self.max_rounds + 1):
            text_parts, calls = [], []
            head = ""  # text held back until the leading emoji is known
            tools = self.tools.declarations(self.tool_policy) if _round < self.max_rounds else []
            stream = self.llm.stream_chat(self._messages(turn), tools or None, conversation=self.conversation)
            async with contextlib.aclosing(stream):
                async for ev in stream:
                    if ev.kind == "text":
                        text_parts.append(ev.text)
                        if not emotion_sent:
                            head += ev.text
                            if len(head.strip()) < 2:
                                continue
                            emotion, rest = split_emotion(head)
                            emotion_sent = True
                            if on_emotion is not None:
                                await on_emotion(emotion or "neutral")
                            chunk = rest
                        else:
                            chunk = ev.text
                        for sentence in seg.feed(chunk):
                            yield sentence
                    elif ev.kind == "tool_call":
                        calls.append(ev)
                    elif ev.kind == "error":
                        self.last_error = ev
                        log.warning("LLM failed: %s %s", ev.reason, ev.message)
            if head and not emotion_sent:
                emotion, rest = split_emotion(head)
                emotion_sent = True
                if on_emotion is not None:
                    await on_emotion(emotion or "neutral")
                for sentence in seg.feed(rest):
                    yield sentence
            for sentence in seg.flush():
                yield sentence
            said = "".join(text_parts)
            if not calls:
                if said:
                    turn.append({"role": "assistant", "content": said})
                    if gate is None or await asyncio.shield(gate):
                        self._grew(turn)
                elif self.last_error is not None:
                    self.last_error = None
                    line = self.lines.get("llm_failed", language)
                    if on_emotion is not None and not emotion_sent:
                        await on_emotion("sad")
                    yield line
                return
            if gate is not None and not await asyncio.shield(gate):
                return  # tools have effects: never for words the child went on from
            turn.append({"role": "assistant", "content": said or None, "tool_calls": [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.raw_arguments or "{}"}} for c in calls]})
            ended = None
            for c in calls:
                args = c.arguments if c.error is None else None
                out = await self.tools.call(c.name, args, self.tool_policy)
                log.info("tool %s(%s) -> %s", c.name, json.dumps(args, ensure_ascii=False)[:200], out.text[:200])
                turn.append({"role": "tool", "tool_call_id": c.id, "content": out.text})
                if out.end_turn:
                    ended = out
            if ended is not None:
                if ended.say:
                    turn.append({"role": "assistant", "content": ended.say})
                self._grew(turn)
                if ended.say:
                    yield ended.say
                return
            self._grew(turn)
            turn = []
