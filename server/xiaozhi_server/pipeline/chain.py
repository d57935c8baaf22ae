"""The voice chain of one session, declared in order: the one place that
lists its stages and builds them.

    inbound   listen       listener.py   device Opus -> 16 kHz PCM -> VAD -> end of turn
              transcribe   asr.py        the ASR provider (its one caller)
              WORDS        below         stages on the child's words, in order
    decide    the App Runtime (runtime/) by the task's mode; CHAT -> dialogue.py
              (the chat LLM, tool rounds, sentences as they stream)
    outbound  SENTENCES    below         stages on each sentence of a reply, in order
              speak        speaker.py    TTS -> 24 kHz -> Opus -> paced frames

A stage in WORDS or SENTENCES is an async callable `(text) -> text | None
| Instead`: it may rewrite the text, drop it (None or ""), or answer
Instead(line): the line is spoken in place of the turn (WORDS: the words
go no further; SENTENCES: the reply stops there). Each session's chain
starts with its safety filter (safety.py), one stage in each list; a
streaming ASR provider plugs into asr.py. The session asks this module
for its parts and never builds a stage itself.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable

from ..config import AsrConfig, PromptsConfig, SessionConfig, VadConfig
from .asr import Transcriber, expected_words
from .dialogue import Dialogue
from .listener import Listener
from .reply import Turn
from .safety import Instead, SafetyFilter
from .speaker import Speaker

if TYPE_CHECKING:
    from ..mcp.tools import ToolTable

log = logging.getLogger(__name__)

TextStage = Callable[[str], Awaitable["str | Instead | None"]]

# The child's words, after ASR (or typed, listen detect), before the App Runtime.
WORDS: list[TextStage] = []
# Each sentence of a reply, before TTS (and before its subtitle is sent).
SENTENCES: list[TextStage] = []


class Chain:
    """One session's chain: its stages, built from what the process shares
    (`services`: providers, config, the care records: topics, transcripts, memory). filtered(): whether
    the running task is held to the safety filter (the chat app's)."""

    def __init__(self, services: Any, device_id: str = "", filtered: Callable[[], bool] = lambda: True,
                 language: str = "zh") -> None:
        self.services = services
        self.config = services.config
        self.safety = SafetyFilter(device_id, getattr(services, "care", None), services.lines, filtered,
                                   language)
        # read at the session's start
        self.words: list[TextStage] = [self.safety.words] + list(WORDS)
        self.sentences: list[TextStage] = [self.safety.sentence] + list(SENTENCES)
        self._confirming: set[asyncio.Task] = set()

    # ---- inbound ----

    def listener(self, on_speech_start: Callable[[], Awaitable[None]],
                 on_utterance: Callable[[Turn], Awaitable[None]]) -> Listener:
        s = self.services
        transcriber = Transcriber(s.asr, language=AsrConfig.of(self.config).language)
        return Listener(s.vad, transcriber, on_speech_start, on_utterance, vad_config=VadConfig.of(self.config))

    async def hear_child(self, listener: Listener, device_id: str, care: Any, family: Any) -> None:
        """Tune the session's recogniser to its child: the one language a
        parent says they speak (limits.language) and, for a recogniser that
        takes a prompt (Whisper) or hotwords (FunASR), their name from
        memory and the command words of that language. Without that
        setting there are none: words of one language tip Whisper's
        detection towards it (a Chinese prompt took English utterances
        from 26 % to 33 % CER, docs/providers.md).
        Without a control store, or when it cannot be read, as configured."""
        forced, name = None, ""
        try:
            if family is not None:
                forced = (await family.limits(device_id)).get("language")
            if care is not None:
                memory = await care.memory(device_id)
                if memory.get("enabled"):
                    name = (memory.get("profile") or {}).get("name") or ""
        except Exception as e:   # the store is away: hear as configured
            log.info("[%s] the child's language and name not read: %s", device_id, e)
        words = AsrConfig.of(self.config).command_words
        listener.asr.hear_as(forced, expected_words(name, forced, words) if forced else ())

    async def heard(self, text: str) -> str | Instead | None:
        """The child's words through WORDS; None when a stage dropped them,
        Instead when a stage answers in their place."""
        for stage in self.words:
            out = await stage(text)
            if not out or isinstance(out, Instead):
                return out or None
            text = out
        return text

    # ---- decide ----

    def dialogue(self, tools: ToolTable, language: str) -> Dialogue:
        cfg = SessionConfig.of(self.config)
        return Dialogue(self.services.llm, tools, PromptsConfig.of(self.config).agent,
                        history_turns=cfg.history_turns,
                        max_rounds=cfg.max_tool_rounds, language=language,
                        lines=self.services.lines)

    # ---- outbound ----

    def spoken(self, sentences: AsyncIterator[str], gate: asyncio.Future | None = None,
               said: list[str] | None = None) -> AsyncIterator[str]:
        """A reply's sentences through SENTENCES (the same iterator when there
        are none and nothing is to be kept). said: gets each sentence passed
        on to be spoken. gate: the child's words final (an Instead's confirm waits for it)."""
        if not self.sentences and said is None:
            return sentences
        return self._through(sentences, gate, said)

    async def _through(self, sentences, gate, said):
        self.safety.new_reply()
        async with contextlib.aclosing(sentences):
            async for text in sentences:
                for stage in self.sentences:
                    out = await stage(text)
                    if isinstance(out, Instead):
                        self.confirm_when_final(out, gate)
                        if said is not None:
                            said.append(out.line)
                        yield out.line
                        return          # the rest of the reply is not spoken
                    if not out:
                        break
                    text = out
                else:
                    if said is not None:
                        said.append(text)
                    yield text

    def confirm_when_final(self, instead: Instead, gate: asyncio.Future | None) -> None:
        """Call instead.confirm() once the gate says the words were final (never if not)."""
        if instead.confirm is None:
            return

        async def confirm():
            if gate is None or await asyncio.shield(gate):
                await instead.confirm()
        t = asyncio.ensure_future(confirm())
        self._confirming.add(t)
        t.add_done_callback(self._confirming.discard)

    def speaker(self, send_json: Callable[[dict], Awaitable[bool]],
                send_audio: Callable[[bytes], Awaitable[None]], session_id: str) -> Speaker:
        return Speaker(self.services.tts, send_json, send_audio, session_id)
