"""Text folded to one spelling before any match: what a child or a model
may write to slip a word past a list, undone.

    NFKC, casefold           full-width, ligatures, ＡＢＣ, Ⓚ -> plain letters
    format characters out    zero-width spaces and joiners, bidi marks (category Cf)
    Traditional -> Simplified one character at a time (zhconv's table: 媽 -> 妈, 鬥 -> 斗)
    homoglyphs               Greek ο, Cyrillic а ... -> Latin (Unicode's confusables,
                             via confusable_homoglyphs' table)
    leet inside a word       b1tch -> bitch, $h1t -> shit (digits alone stay digits)
    separators               k.i.l.l, g h o s t, 打 架, 打。架 -> kill, ghost, 打架

Both tables are cut to what the fold needs when the process builds them
(fold_tables()): the full files are read once and dropped.
"""
from __future__ import annotations

import importlib.resources
import json
import re
import unicodedata

# Leet digits and signs inside a word of letters (a number alone is left alone).
LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s",
                      "!": "i", "|": "l", "+": "t"})
_LEET_WORD = re.compile(r"[a-z0-9@$!|+]*[a-z][a-z0-9@$!|+]*")
# Two or more single letters with separators between: k.i.l.l, g h o s t, f-u-c-k.
_SPELLED = re.compile(r"(?<![a-z])[a-z](?:[\s.\-_*·•,/\\~'`^]+[a-z](?![a-z]))+")
_HAN = "\u3400-\u9fff\uf900-\ufaff"
# Anything but letters and digits between two Han characters: spaces, dots,
# stars, and a sentence's end (a word split over two sentences joins again).
_HAN_GAP = re.compile(r"(?<=[%s])[^\w%s]+(?=[%s])" % (_HAN, _HAN, _HAN))

_tables: tuple[dict, dict] | None = None


def _traditional_table() -> dict[int, str]:
    """zhconv's Traditional -> Simplified pairs of one character each."""
    data = json.loads(importlib.resources.files("zhconv").joinpath("zhcdict.json").read_bytes())
    table = {}
    for src in ("zh2Hans", "zh2CN"):
        for k, v in data[src].items():
            if len(k) == 1 and len(v) == 1:
                table[ord(k)] = v
    return table


def _homoglyph_table() -> dict[int, str]:
    """Every character Unicode lists as confusable with a Latin letter or a digit -> that letter."""
    data = json.loads(importlib.resources.files("confusable_homoglyphs").joinpath("confusables.json").read_bytes())
    table = {}
    for ch, entries in data.items():
        if len(ch) != 1 or ch.isascii():
            continue
        for e in entries:
            c = e["c"]
            if len(c) == 1 and c.isascii() and c.isalnum():
                table[ord(ch)] = c.lower()
                break
    return table


def fold_tables() -> tuple[dict, dict]:
    """(Traditional table, homoglyph table), built once per process."""
    global _tables
    if _tables is None:
        _tables = (_traditional_table(), _homoglyph_table())
    return _tables


def _no_format(text: str) -> str:
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def fold(text: str) -> str:
    """The text in the one spelling matches are made against."""
    return fold_spelled(text)[0]


def fold_spelled(text: str) -> tuple[str, list[str]]:
    """(fold(text), the letters spelled out one by one in it, each run joined:
    "a g h o s t" -> ["aghost"], for a matcher to look inside)."""
    trad, glyphs = fold_tables()
    text = unicodedata.normalize("NFKC", _no_format(text)).casefold()
    # Han characters are not folded as homoglyphs (一 is not a dash): only the rest.
    text = "".join(trad.get(ord(ch), ch) if "\u3400" <= ch <= "\ufaff" else glyphs.get(ord(ch), ch)
                   for ch in text)
    text = _LEET_WORD.sub(lambda m: m.group().translate(LEET) if not m.group().isalpha() else m.group(), text)
    runs = [re.sub(r"[^a-z]", "", m.group()) for m in _SPELLED.finditer(text)]
    text = _SPELLED.sub(lambda m: re.sub(r"[^a-z]", "", m.group()), text)
    return _HAN_GAP.sub("", text), runs
