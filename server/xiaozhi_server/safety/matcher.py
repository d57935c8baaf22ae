"""Where a list of words is found in a text, after normalize.fold().

A term is matched the way its language needs:
    English   word by word on stems (snowball's English stemmer): ghost
              finds ghosts, ghostly, ghosting; a term of several words
              finds them in a row; -er/-ers too (killer); letters spelled
              one by one are looked inside (a g h o s t).
    Chinese   as characters anywhere, after the everyday compounds that
              contain a topic are masked (terms.json's `compounds`: 机灵鬼
              is not 鬼, 打架子鼓 is not 打架): a word list, not a segmenter
              (jieba's dictionary would cost each worker ~50 MB).
              A term of two syllables or more is also found in pinyin
              typed in Latin letters (da jia, dajia).
    sounds    `insults_pinyin` are matched on the text's pinyin, so the
              same insult written with other characters (草泥马) is found.
"""
from __future__ import annotations

import functools
import importlib.resources
import json
import re
import unicodedata

from .normalize import fold, fold_spelled, package_file

MASK = "\u25a1"          # □: a masked compound breaks a match without joining its neighbours
_SUFFIXES = ("er", "ers")


@functools.cache
def terms() -> dict:
    """The built-in data (terms.json), read once per process."""
    return json.loads(importlib.resources.files(__package__).joinpath("terms.json").read_text("utf-8"))


@functools.cache
def _stemmer():
    import snowballstemmer  # type: ignore[import-untyped]
    return snowballstemmer.stemmer("english")


def stem(word: str) -> str:
    word = terms()["irregular"].get(word, word)
    return _stemmer().stemWord(word)


@functools.cache
def _syllables() -> dict[int, str]:
    """Each Han character's first reading, without tone (pypinyin's character
    table, read alone: the package with its phrase tables costs ~50 MB)."""
    plain: dict[str, str] = {}       # each reading once: ~1 500 strings for ~42 000 characters

    def toneless(reading):
        if reading not in plain:
            plain[reading] = "".join(c for c in unicodedata.normalize("NFD", reading)
                                     if unicodedata.category(c) != "Mn")
        return plain[reading]
    found = re.finditer(r'"(\d+)": ?"([^",]+)', package_file("pypinyin", "pinyin_dict.json"))
    return {int(m.group(1)): toneless(m.group(2)) for m in found}


def pinyin(text: str) -> list[str]:
    """The syllables of the Han characters in text (no tones), other words as they are."""
    table = _syllables()
    return re.findall(r"[a-z]+", "".join(" %s " % table[ord(ch)] if ord(ch) in table else ch for ch in text))


def has_han(text: str) -> bool:
    return any("\u3400" <= ch <= "\u9fff" for ch in text)


@functools.cache
def _compounds() -> re.Pattern:
    words = sorted((fold(w) for w in terms()["compounds"]), key=len, reverse=True)
    return re.compile("|".join(re.escape(w) for w in words))


@functools.cache
def _compounds_typed() -> re.Pattern | None:
    """The compounds of three syllables or more as typed in pinyin (da jia hao is 大家好,
    not 打架): shorter ones would hide a topic of the same sound (da jia)."""
    sounds = [pinyin(w) for w in terms()["compounds"] if has_han(w)]
    alts = [_sound_pattern(s) for s in sounds if len(s) >= 3]
    return re.compile("|".join(alts)) if alts else None


class Folded:
    """One text, folded once and read by every matcher."""

    def __init__(self, text: str) -> None:
        self.text, self.spelled = fold_spelled(text)
        self.han = _compounds().sub(lambda m: MASK * len(m.group()), self.text)
        self.words = re.findall(r"[a-z]+", self.text)
        self.stems = [stem(w) for w in self.words]
        typed = _compounds_typed()
        self.latin = " ".join(self.words)
        if typed is not None:
            self.latin = typed.sub(MASK, self.latin)
        self._sound: str | None = None

    @property
    def sound(self) -> str:
        """The whole text as pinyin syllables and Latin words, one space between."""
        if self._sound is None:
            self._sound = " ".join(pinyin(self.text))
        return self._sound


def _sound_pattern(syllables: list[str]) -> str:
    return r"(?<![a-z])%s(?![a-z])" % r" ?".join(re.escape(s) for s in syllables)


class Matcher:
    """A list of (label, term): find() answers the label of the first term found."""

    def __init__(self, entries: list[tuple[str, str]], by_sound: list[tuple[str, str]] | None = None) -> None:
        self.english: list[tuple[str, tuple[str, ...], str, str]] = []
        self.chinese: list[tuple[str, str]] = []
        sounds: list[tuple[str, str]] = []
        for label, term in entries:
            t = fold(term).strip()
            if not t:
                continue
            if has_han(t):
                self.chinese.append((label, t))
                syl = pinyin(t)
                if len(syl) >= 2:
                    sounds.append((label, _sound_pattern(syl)))
            else:
                words = re.findall(r"[a-z0-9]+", t)
                if words:
                    self.english.append((label, tuple(stem(w) for w in words), words[-1], "".join(words)))
        self._latin = re.compile("|".join("(%s)" % p for _, p in sounds)) if sounds else None
        self._latin_labels = [label for label, _ in sounds]
        by_sound = by_sound or []
        self._sound = (re.compile("|".join("(%s)" % _sound_pattern(s.split()) for _, s in by_sound))
                       if by_sound else None)
        self._sound_labels = [label for label, _ in by_sound]

    def find(self, f: Folded) -> str | None:
        for label, t in self.chinese:
            if t in f.han:
                return label
        for label, stems, last, letters in self.english:
            n = len(stems)
            for i in range(len(f.stems) - n + 1):
                if tuple(f.stems[i:i + n]) == stems or (
                        tuple(f.stems[i:i + n - 1]) == stems[:-1] and
                        any(f.words[i + n - 1] == last + s for s in _SUFFIXES)):
                    return label
            if f.spelled and any(letters in run or "".join(stems) in run for run in f.spelled):
                return label
        if self._latin is not None:
            m = self._latin.search(f.latin)
            if m:
                return self._latin_labels[(m.lastindex or 1) - 1]
        if self._sound is not None:
            m = self._sound.search(f.sound)
            if m:
                return self._sound_labels[(m.lastindex or 1) - 1]
        return None


def expansions(topic: str) -> list[str]:
    """The built-in synonyms of a parent's topic (its folded form, or its stem)."""
    syn = terms()["synonyms"]
    key = fold(topic).strip()
    if key in syn:
        return list(syn[key])
    st = " ".join(stem(w) for w in re.findall(r"[a-z]+", key))
    for k, v in syn.items():
        if not has_han(k) and " ".join(stem(w) for w in k.split()) == st:
            return list(v)
    return []


@functools.cache
def insults() -> Matcher:
    """The insults always blocked besides the lexicon: words and sounds."""
    t = terms()
    return Matcher([(w, w) for w in t["insults"]], [(s, s) for s in t["insults_pinyin"]])
