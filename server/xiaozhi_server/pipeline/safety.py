"""The chat app's safety filter: the child's words and each sentence of the
model's reply, checked against the device's blocked topics (the parents'
list, each with its synonyms), the built-in insults and a maintained zh + en
lexicon (glin-profanity's word lists). Every text is folded first and
matched by stem, characters and sound (safety/: normalize.py, matcher.py).

It is one stage in chain.py's WORDS and one in its SENTENCES. On a hit
the stage answers `Instead(line)`: the redirect line (the parent's, else
the lines file's `safety_redirect` in the child's language) is spoken in
place of the turn, the blocked words never reach the model (WORDS) or TTS
(SENTENCES: each sentence is checked with the one before it, so a word
split by a sentence's end is found whole, and the reply stops there),
and the turn is flagged for the parents' review list once the child's
words are final.

What it cannot do (docs/server.md, "The safety filter"): it matches words,
not meaning, so a topic said in words neither the list nor its synonyms
hold, or misheard by ASR, passes; a sentence spoken before the one that
hits is already heard. Other modes (translation, lessons) are not filtered.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Awaitable, Callable

from ..safety import Folded, Matcher, expansions, fold_tables, insults
from ..text.lang import language_of

if TYPE_CHECKING:
    from ..text.lines import Lines
    from .care import CarePort

log = logging.getLogger(__name__)

TOPICS_TTL_S = 5.0          # a parent's change reaches a running session within this long
# Everyday phrases the lexicon's short Chinese entries sit inside ("妈的" in
# 妈妈的包, mum's bag; "处女" in the star sign 处女座): not a hit. (The
# compounds of safety/terms.json are masked before the lexicon reads a text too.)
LEXICON_ALLOW = ("妈妈的", "我妈的", "处女座", "处女作", "处女航", "处女地")


class Instead:
    """A stage's answer in place of the text: `line` is spoken instead, and
    `confirm()` is called once the turn is final (the child's words committed)."""

    def __init__(self, line: str, confirm: Callable[[], Awaitable[None]] | None = None) -> None:
        self.line = line
        self.confirm = confirm


class Lexicon:
    """glin-profanity's English and Chinese lists, the built-in insults and
    the folding tables, built once per process."""

    def __init__(self) -> None:
        from glin_profanity import Filter
        self._filter = Filter({"languages": ["english", "chinese"], "whitelist": list(LEXICON_ALLOW)})
        fold_tables()
        insults()
        Folded("")          # the compound patterns too: nothing is built at a child's first words

    def find(self, f: Folded) -> str | None:
        """A lexicon word or an insult in the folded text, or None."""
        found = self._filter.check_profanity(f.han)
        if found["contains_profanity"] and found["profane_words"]:
            return found["profane_words"][0]
        return insults().find(f)


_lexicon: Lexicon | None = None


def lexicon() -> Lexicon:
    """The process's lexicon (Services.start builds it before the first session)."""
    global _lexicon
    if _lexicon is None:
        _lexicon = Lexicon()
    return _lexicon


def topic_matcher(topics: list[str], synonyms: dict[str, list[str]] | None = None) -> Matcher | None:
    """One matcher for a parent's topics, each with its synonyms: the
    parent's own list for a topic they edited (synonyms), else the built-in one."""
    synonyms = synonyms or {}
    entries = []
    for t in topics:
        if not t.strip():
            continue
        entries.append((t, t))
        entries += [(t, w) for w in synonyms.get(t, expansions(t))]
    return Matcher(entries) if entries else None


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
        self._synonyms: dict = {}
        self._matcher: Matcher | None = None
        self._last = ""          # the reply's sentence before this one
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
        synonyms = t.get("synonyms") or {}
        if t["blocked_topics"] != self._topics or synonyms != self._synonyms:
            self._topics, self._synonyms = list(t["blocked_topics"]), dict(synonyms)
            self._matcher = topic_matcher(self._topics, self._synonyms)
        self._line = t["redirect_line"]

    async def find(self, text: str) -> str | None:
        """The blocked topic or lexicon word in text, or None."""
        await self._refresh()
        f = Folded(text)
        if self._matcher is not None:
            hit = self._matcher.find(f)
            if hit is not None:
                return hit
        return lexicon().find(f)

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

    def new_reply(self) -> None:
        """A reply starts: no sentence before the next one."""
        self._last = ""

    async def sentence(self, text: str) -> str | Instead:
        if not self.active():
            return text
        # With the sentence before: "You should kill." + " Yourself ..." and
        # "喜欢打。" + "架是不对的" are found whole (fold() joins Han across a
        # stop); a Latin word cut by a stop ("a gh." + "ost") is joined too.
        topic = await self.find((self._last + " " + text) if self._last else text)
        if topic is None and self._last:
            topic = await self.find(self._last.rstrip(" .!?;,") + text.lstrip())
        self._last = text
        if topic is None:
            return text
        self.hits += 1
        line = self.redirect_line(self.heard or text)
        return Instead(line, self._flag(topic, self.heard, text, line))
