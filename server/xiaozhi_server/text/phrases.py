"""Matching what the child said against configured phrases (wake words,
goodbyes, leaving translation): one rule for all of them.

ASR writes the same words many ways: 「聊会儿天吧！」 and 「聊会天吧」, "Bye-bye."
and "bye bye", "Good bye" and "goodbye". Both sides are compared plain:
lowercase, without spaces, punctuation or the erhua 儿.
"""
from __future__ import annotations

from typing import Iterable


def plain(text: str) -> str:
    """Words as phrases are matched: lowercase letters and digits only, no 儿."""
    return "".join(c for c in text.lower() if c.isalnum() and c != "儿")


def says(text: str, phrases: Iterable[str], max_chars: int) -> bool:
    """One of the phrases inside a short utterance (at most max_chars plain
    characters): a longer sentence that merely quotes one does not count."""
    t = plain(text)
    return len(t) <= max_chars and any(p and p in t for p in map(plain, phrases))
