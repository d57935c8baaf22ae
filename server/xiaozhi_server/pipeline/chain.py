"""The voice chain of one session, declared in order: the one place that
lists its stages and builds them.

    inbound   listen       listener.py   device Opus -> 16 kHz PCM -> VAD -> end of turn
              transcribe   asr.py        the ASR provider (its one caller)
              WORDS        below         stages on the child's words, in order
    decide    the App Runtime (runtime/) by the task's mode; CHAT -> dialogue.py
              (the chat LLM, tool rounds, sentences as they stream)
    outbound  SENTENCES    below         stages on each sentence of a reply, in order
              speak        speaker.py    TTS -> 24 kHz -> Opus -> paced frames

A stage in WORDS or SENTENCES is an async callable `(text) -> text | None`:
it may rewrite the text, or drop it (None or ""). A safety filter that
checks the child's words and the model's reply is one entry in each list
plus its code; ASR providers, streaming or not, are called only from asr.py. The session
asks this module for its parts and never builds a stage itself.
"""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable

from .asr import Transcriber
from .dialogue import Dialogue
from .listener import Listener, Utterance
from .speaker import Speaker

if TYPE_CHECKING:
    from ..mcp.tools import ToolTable

TextStage = Callable[[str], Awaitable[str | None]]

# The child's words, after ASR (or typed, listen detect), before the App Runtime.
WORDS: list[TextStage] = []
# Each sentence of a reply, before TTS (and before its subtitle is sent).
SENTENCES: list[TextStage] = []


class Chain:
    """One session's chain: its stages, built from what the process shares
    (`services`: providers and config)."""

    def __init__(self, services: Any) -> None:
        self.services = services
        self.config = services.config
        self.words = list(WORDS)            # read at the session's start
        self.sentences = list(SENTENCES)

    # ---- inbound ----

    def listener(self, on_speech_start: Callable[[], Awaitable[None]],
                 on_utterance: Callable[[Utterance], Awaitable[None]]) -> Listener:
        s = self.services
        transcriber = Transcriber(s.asr, language=self.config["asr"].get("language"))
        return Listener(s.vad, transcriber, on_speech_start, on_utterance, vad_config=self.config.get("vad"))

    async def heard(self, text: str) -> str | None:
        """The child's words through WORDS; None when a stage dropped them."""
        for stage in self.words:
            out = await stage(text)
            if not out:
                return None
            text = out
        return text

    # ---- decide ----

    def dialogue(self, tools: ToolTable, language: str) -> Dialogue:
        cfg = self.config["session"]
        return Dialogue(self.services.llm, tools, self.config["prompts"]["agent"],
                        history_turns=cfg.get("history_turns", 10),
                        max_rounds=cfg.get("max_tool_rounds", 4), language=language,
                        lines=self.services.lines)

    # ---- outbound ----

    def spoken(self, sentences: AsyncIterator[str]) -> AsyncIterator[str]:
        """A reply's sentences through SENTENCES (the same iterator when there are none)."""
        if not self.sentences:
            return sentences
        return self._through(sentences)

    async def _through(self, sentences):
        async with contextlib.aclosing(sentences):
            async for text in sentences:
                for stage in self.sentences:
                    out = await stage(text)
                    if not out:
                        break
                    text = out
                else:
                    yield text

    def speaker(self, send_json: Callable[[dict], Awaitable[bool]],
                send_audio: Callable[[bytes], Awaitable[None]], session_id: str) -> Speaker:
        return Speaker(self.services.tts, send_json, send_audio, session_id)
