"""What a child's words say about the end of their turn, and so how long
a pause must last before the reply prepared for them may be heard.

The end-of-turn detector (turn.py) hears only sound and silence. Once a
pause has ended the turn speculatively, ASR has the words, and they say
more than the silence does: "Can you tell me a story about a cat?" asks
for an answer now, "I went to the park and" is not over. So the commit
silence (listener.py) follows the words:

- a question (ends in ? or ？, or in 吗/呢): `commit_question_ms`, shorter
  than the default;
- unfinished (ends in a comma or an ellipsis, or on a joining word or a
  filler such as "and", "because", "um", "然后", "还有", "嗯"):
  `commit_unfinished_ms`, longer, so a child searching for the next word
  is not cut off;
- a question a streaming recogniser's two passes agree on (the final
  text says the same words as the partial text streamed while the child
  spoke: nothing was rewritten, nothing came after): `commit_stable_question_ms`,
  shorter still (the first word sooner, docs/bench.md has the false
  cut-offs it costs on paused utterances);
- anything else, statements included (Whisper ends most fragments with a
  full stop: "I went to the park." is often followed by "with my sister"),
  or the words not known yet: `commit_silence_ms`.

The word lists are small on purpose: a word they miss only means the
default wait.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..text.lang import has_han

if TYPE_CHECKING:
    from ..config import VadConfig

QUESTION, UNFINISHED, OTHER = "question", "unfinished", "other"

_TERMINAL = ".?!。？！"
_TRAILING = ",，、;；:：…-—"
_QUOTES = "\"'”’」』)）"

# Words a statement goes on after: conjunctions, articles, a few
# prepositions, and the sounds of thinking. Words that often end a whole
# sentence ("so", "that", "her", "to", "的", "这个") are left out, and a
# question mark wins ("Who do you play with?" is a question).
_EN_JOINING = frozenset((
    "and", "or", "but", "because", "cause", "if", "the", "a", "an", "my", "your", "our", "their",
    "of", "with", "about", "for", "from", "into", "um", "umm", "uh", "uhh", "er", "erm", "hmm",
))
_ZH_JOINING = ("然后", "还有", "而且", "因为", "所以", "但是", "可是", "如果", "和", "跟", "或者", "还是",
               "嗯", "呃", "额")
_ZH_ASKING = ("吗", "呢")


def _last_word(text: str) -> str:
    words = text.split()
    return words[-1].lower().strip(_TERMINAL + _TRAILING + _QUOTES) if words else ""


def judge(text: str) -> str:
    """QUESTION, UNFINISHED or OTHER for a transcript."""
    t = text.strip().rstrip(_QUOTES).strip()
    if not t:
        return OTHER
    if t.endswith(("...", "…")) or t[-1] in _TRAILING:
        return UNFINISHED
    if t[-1] in "?？":
        return QUESTION
    if has_han(t):
        core = t.rstrip(_TERMINAL)
        if core.endswith(_ZH_ASKING):
            return QUESTION
        if core.endswith(_ZH_JOINING):
            return UNFINISHED
    elif _last_word(t) in _EN_JOINING:
        return UNFINISHED
    return OTHER


class CommitSilence:
    """The silence (ms) after which a reply to `text` may be heard."""

    def __init__(self, default_ms: int, question_ms: int | None = None, unfinished_ms: int | None = None,
                 stable_question_ms: int | None = None) -> None:
        self.default_ms = default_ms
        self.question_ms = default_ms if question_ms is None else question_ms
        self.unfinished_ms = default_ms if unfinished_ms is None else unfinished_ms
        self.stable_question_ms = self.question_ms if stable_question_ms is None else stable_question_ms

    @classmethod
    def from_config(cls, vad: VadConfig, floor_ms: int = 0) -> "CommitSilence":
        """From the `vad` config; no wait shorter than `floor_ms` (the speculative silence)."""
        return cls(*(max(floor_ms, ms) for ms in (vad.commit_silence_ms, vad.commit_question_ms,
                                                  vad.commit_unfinished_ms, vad.commit_stable_question_ms)))

    @staticmethod
    def prepare_reply(text: str) -> bool:
        """Whether a reply is worth preparing before the commit: words that go
        on ("and", a comma) nearly always do, so a reply prepared for them
        would be an LLM request thrown away."""
        return judge(text) != UNFINISHED

    def for_text(self, text: str | None, stable: bool = False) -> int:
        """`stable`: a streaming recogniser's final text agrees with its partial text."""
        verdict = judge(text) if text else OTHER
        if verdict == QUESTION:
            return min(self.stable_question_ms, self.question_ms) if stable else self.question_ms
        if verdict == UNFINISHED:
            return self.unfinished_ms
        return self.default_ms


def same_words(a: str, b: str) -> bool:
    """The same words, punctuation, spaces and case aside (a streaming
    recogniser's partial text has no punctuation; its final text has)."""
    def core(t):
        return "".join(c for c in t.lower() if c.isalnum())
    return bool(core(a)) and core(a) == core(b)
