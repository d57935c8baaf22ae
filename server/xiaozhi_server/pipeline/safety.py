"""The chat app's safety filter: the child's words and each sentence of the
model's reply, checked against the device's blocked topics (the parents'
list) and a maintained zh + en lexicon (glin-profanity's word lists).

It is one stage in chain.py's WORDS and one in its SENTENCES. On a hit
the stage answers `Instead(line)`: the redirect line (the parent's, else
the lines file's `safety_redirect` in the child's language) is spoken in
place of the turn, the blocked words never reach the model (WORDS) or TTS
(SENTENCES: each sentence is checked before it is spoken, and the reply
stops there), and the turn is flagged for the parents' review list once
the child's words are final.

What it cannot do (docs/server.md, "The safety filter"): it matches words,
not meaning, so a topic said in other words, in another language than the
list's, or misheard by ASR passes; a sentence spoken before the one that
hits is already heard. Other modes (translation, lessons) are not filtered.
"""
from __future__ import annotations

import logging
import re
import time
import unicodedata
from typing import TYPE_CHECKING, Awaitable, Callable

from ..text.lang import has_han, language_of

if TYPE_CHECKING:
    from ..text.lines import Lines
    from .care import CarePort

log = logging.getLogger(__name__)

TOPICS_TTL_S = 5.0          # a parent's change reaches a running session within this long
# Everyday phrases the lexicon's short Chinese entries sit inside ("妈的" in
# 妈妈的包, mum's bag; "处女" in the star sign 处女座): not a hit.
LEXICON_ALLOW = ("妈妈的", "我妈的", "处女座", "处女作", "处女航", "处女地")


class Instead:
    """A stage's answer in place of the text: `line` is spoken instead, and
    `confirm()` is called once the turn is final (the child's words committed)."""

    def __init__(self, line: str, confirm: Callable[[], Awaitable[None]] | None = None) -> None:
        self.line = line
        self.confirm = confirm


class Lexicon:
    """glin-profanity's English and Chinese lists, built once per process."""

    def __init__(self) -> None:
        from glin_profanity import Filter
        self._filter = Filter({"languages": ["english", "chinese"], "whitelist": list(LEXICON_ALLOW)})

    def find(self, text: str) -> str | None:
        found = self._filter.check_profanity(text)
        return found["profane_words"][0] if found["contains_profanity"] and found["profane_words"] else None


_lexicon: Lexicon | None = None


def lexicon() -> Lexicon:
    """The process's lexicon (Services.start builds it before the first session)."""
    global _lexicon
    if _lexicon is None:
        _lexicon = Lexicon()
    return _lexicon


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def topic_pattern(topics: list[str]) -> re.Pattern | None:
    """One pattern for a parent's topics: Chinese ones anywhere in the text,
    others as whole words (an English plural -s / -es too), any spacing."""
    alts = []
    for t in topics:
        t = _norm(t).strip()
        if not t:
            continue
        body = r"\s+".join(re.escape(w) for w in t.split())
        alts.append(body if has_han(t) else r"(?<!\w)%s(?:s|es)?(?!\w)" % body)
    return re.compile("|".join("(%s)" % a for a in alts)) if alts else None


class SafetyFilter:
    """One session's filter. family: the store (None: the lexicon only);
    active(): whether the current task is filtered (the chat app)."""

    def __init__(self, device_id: str, care: CarePort | None, lines: Lines,
                 active: Callable[[], bool], language: str = "zh") -> None:
        self.device_id = device_id
        self.care = care
        self.lines = lines
        self.active = active
        self.language = language
        self._topics: list[str] = []       # the parent's list, as given
        self._matched: list[str] = []      # the topic of each group of the pattern
        self._pattern: re.Pattern | None = None
        self._line: str | None = None
        self._read_at = -TOPICS_TTL_S
        self.heard = ""          # the child's last words (a flag for a blocked reply names them)
        self.hits = 0

    async def _refresh(self):
        if self.care is None or time.monotonic() - self._read_at < TOPICS_TTL_S:
            return
        # Read again only after the TTL, failed or not: a store that is away
        # (a PostgreSQL connect waits up to 5 s) must not hold every turn.
        self._read_at = time.monotonic()
        try:
            t = await self.care.topics(self.device_id)
        except Exception as e:      # the last list (and the lexicon) still hold
            log.warning("[%s] blocked topics not read: %s", self.device_id, e)
            return
        if t["blocked_topics"] != self._topics:
            self._topics = list(t["blocked_topics"])
            self._matched = [x for x in self._topics if x.strip()]
            self._pattern = topic_pattern(self._matched)
        self._line = t["redirect_line"]

    async def find(self, text: str) -> str | None:
        """The blocked topic or lexicon word in text, or None."""
        await self._refresh()
        if self._pattern is not None:
            m = self._pattern.search(_norm(text))
            if m and m.lastindex:
                return self._matched[m.lastindex - 1]
        return lexicon().find(text)

    def redirect_line(self, text: str) -> str:
        return self._line or self.lines.get("safety_redirect", language_of(text, self.language))

    def _flag(self, topic, child_said, reply_blocked, line):
        async def confirm():
            log.info("[%s] safety filter: %r blocked (%s)", self.device_id, topic,
                     "reply" if reply_blocked else "child's words")
            if self.care is None:
                return
            try:
                await self.care.add_flag(self.device_id, topic, child_said, reply_blocked, line)
            except Exception as e:
                log.warning("[%s] safety flag not stored: %s", self.device_id, e)
        return confirm

    # ---- the stages ----

    async def words(self, text: str) -> str | Instead:
        if not self.active():
            return text
        self.heard = text
        topic = await self.find(text)
        if topic is None:
            return text
        self.hits += 1
        line = self.redirect_line(text)
        return Instead(line, self._flag(topic, text, None, line))

    async def sentence(self, text: str) -> str | Instead:
        if not self.active():
            return text
        topic = await self.find(text)
        if topic is None:
            return text
        self.hits += 1
        line = self.redirect_line(self.heard or text)
        return Instead(line, self._flag(topic, self.heard, text, line))
