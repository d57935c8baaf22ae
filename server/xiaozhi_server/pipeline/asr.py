"""The pipeline's ASR stage: the one place that calls the ASR provider.

Two ways in, one result:
- a streaming provider (`funasr`, a `fallback` chain over it) gets one
  stream per utterance from `open()`: the listener pushes the audio while
  the child speaks, reads its partial text, and `finish(stream)` takes the
  final text at the end of the turn;
- a batch provider (Whisper, `openai`) gets the whole utterance at the
  end: `words(pcm)`.

Chinese comes out in Simplified characters, always (text/simplified.py):
the final text here, and a stream's partial text as it is set (its
`script` is this stage's), so neither the turn rule, the LLM, the safety
filter, the transcript nor the device's screen ever sees Traditional.

Per session (`hear_as`, from pipeline/chain.py once the device is known):
the one language a parent says the child speaks, in place of the
config's (a recogniser told the language makes fewer wrong words than one
choosing), and the words the child is likely to say that a recogniser
gets wrong most (the child's name, the companion's and the command
words), handed to a recogniser that takes a prompt (`takes_prompt`:
Whisper's initial prompt) and to every stream (`words`: FunASR's
hotwords).

Either returns the stripped text, or `AsrFailed` when no text could be
had (the service was down, slow, cut, refused us or answered garbage, or
the engine crashed): the session speaks its "I could not hear that" line
for it, so the child is never met with silence. One log line says why;
AsrError messages never hold a credential.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, cast

from ..providers.asr.base import AsrError, AsrStream, PartialCallback, open_stream
from ..text.simplified import simplified, wanted

if TYPE_CHECKING:
    from ..providers.base import AsrProvider, PromptedAsr

log = logging.getLogger(__name__)


# Words a child says to the companion that a recogniser gets wrong most
# (its name, the board's command words and the server's exit phrases:
# docs/entry.md, config session.exit_translation_phrases), per language;
# asr.command_words replaces them.
COMMAND_WORDS = {
    "zh": ["小智", "切换模式", "打开翻译", "开始复读", "我们来聊天吧", "退出翻译"],
    "en": ["Xiaozhi", "stop translating", "back to chat"],
}


def expected_words(name: str, language: str, words: dict | None = None) -> tuple[str, ...]:
    """The words a child of `language` is likely to say that a recogniser
    gets wrong most: their name and the command words (`words`: the
    config's asr.command_words, else COMMAND_WORDS)."""
    return tuple(([name] if name else []) + list((COMMAND_WORDS if words is None else words).get(language) or []))


def said_before(words: tuple[str, ...], language: str | None) -> str:
    """The words as one line of their language: what a prompted recogniser
    (Whisper) reads as said before."""
    if not words:
        return ""
    return "，".join(words) + "。" if language == "zh" else ", ".join(words) + "."


class AsrFailed:
    """No words for an utterance: `reason` is AsrError's (connection,
    timeout, auth, refused, closed, bad_response) or "crashed"."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self):
        return "AsrFailed(%s)" % self.reason


class Transcriber:
    def __init__(self, provider: AsrProvider, language: str | None = None) -> None:
        self.provider = provider
        self.language = language      # the config's asr.language; None = the provider guesses
        self.script = simplified if wanted(language) else None   # applied to every text heard
        self.prompt = ""              # words to expect (the child's name, command words), as a line
        self.expected: tuple[str, ...] = ()   # the same, one by one (a streaming recogniser's hotwords)

    def hear_as(self, language: str | None = None, words: tuple[str, ...] = ()) -> None:
        """This session's child: the one language they speak (None: as
        configured) and the words to expect."""
        if language:
            self.language = language
            self.script = simplified if wanted(language) else None
        self.expected = tuple(words)
        self.prompt = said_before(self.expected, self.language)

    @property
    def streaming(self) -> bool:
        """The provider hears audio as it is pushed (else it is given the utterance whole)."""
        return hasattr(self.provider, "open_stream")

    def open(self, on_partial: PartialCallback | None = None) -> AsrStream:
        """A stream for one utterance (push while the child speaks, then finish)."""
        stream = open_stream(self.provider, self.language, on_partial)
        stream.script = self.script
        stream.words = self.expected
        return stream

    def _out(self, text: str) -> str:
        text = text.strip()
        return self.script(text) if self.script is not None else text

    async def finish(self, stream: AsrStream) -> str | AsrFailed:
        """The end of the utterance: its final text, or AsrFailed."""
        try:
            return self._out(await stream.finish())
        except AsrError as err:
            return self._failed(err)
        except Exception:
            log.exception("ASR crashed")
            return AsrFailed("crashed")
        finally:
            await stream.cancel()   # a no-op once finished; closes what an error left open

    async def words(self, pcm16k: bytes) -> str | AsrFailed:
        """The words of one whole utterance (16 kHz mono int16), stripped."""
        try:
            if self.prompt and getattr(self.provider, "takes_prompt", False):
                prompted = cast("PromptedAsr", self.provider)
                text = await prompted.transcribe(pcm16k, language=self.language, prompt=self.prompt)
            else:
                text = await self.provider.transcribe(pcm16k, language=self.language)
        except AsrError as err:
            return self._failed(err)
        except Exception:
            log.exception("ASR crashed")
            return AsrFailed("crashed")
        return self._out(text)

    @staticmethod
    def _failed(err: AsrError) -> AsrFailed:
        log.warning("ASR failed: %s", err)   # the session says its could-not-hear line
        return AsrFailed(err.reason)
