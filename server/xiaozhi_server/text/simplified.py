"""Simplified Chinese for what the child said.

Whisper writes Mandarin in Traditional characters as often as not (its
training text mixes both), and a streaming service may too. The product
speaks to children who read Simplified: every Chinese result of the ASR
stage goes through `simplified()` before the LLM, the safety filter, the
transcript or the device's screen see it (pipeline/asr.py).

zhconv's "zh-cn" table converts phrase by phrase (with its word list, so
"頭髮" becomes "头发", not a character-by-character guess) and leaves
Latin letters, digits and punctuation alone, so a code-switched "我想听
Baby Shark" keeps its English. A language set to Cantonese or Taiwanese
Mandarin ("yue", "zh-tw", "zh-hk") keeps the recogniser's script.
"""
from __future__ import annotations

from .lang import has_han

KEEP_SCRIPT = ("yue", "zh-tw", "zh-hk", "zh-hant", "ja")


def wanted(language: str | None) -> bool:
    """Whether results heard with this ASR language are put in Simplified
    (None means the recogniser guesses: a Han result is Mandarin here)."""
    return (language or "").lower() not in KEEP_SCRIPT


def simplified(text: str) -> str:
    """`text` with its Traditional characters in Simplified (unchanged without Han)."""
    if not text or not has_han(text):
        return text
    import zhconv   # its tables load on first use (about 0.2 s), not at import of the server
    return zhconv.convert(text, "zh-cn")
