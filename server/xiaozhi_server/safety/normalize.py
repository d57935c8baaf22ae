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

import importlib.util
import json
import os
import re
import unicodedata

# Leet digits and signs inside a word of letters (a number alone is left alone).
LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "6": "g", "7": "t", "@": "a",
                      "$": "s", "!": "i", "|": "l", "+": "t"})
_LEET_WORD = re.compile(r"[a-z0-9@$!|+]*[a-z][a-z0-9@$!|+]*")
# Two or more single letters with separators between: k.i.l.l, g h o s t, f-u-c-k.
_SPELLED = re.compile(r"(?<![a-z])[a-z](?:[\s.\-_*·•,/\\~'`^]+[a-z](?![a-z]))+")
_HAN = "\u3400-\u9fff\uf900-\ufaff"
# Anything but letters and digits between two Han characters: spaces, dots,
# stars, and a sentence's end (a word split over two sentences joins again).
_HAN_GAP = re.compile(r"(?<=[%s])[^\w%s]+(?=[%s])" % (_HAN, _HAN, _HAN))

_tables: tuple[dict, dict] | None = None


def package_file(package: str, name: str) -> str:
    """The text of a data file shipped in an installed package, without
    importing the package (importing zhconv alone costs ~10 MB)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("%s is not installed (requirements.txt)" % package)
    with open(os.path.join(list(spec.submodule_search_locations)[0], name), encoding="utf-8") as f:
        return f.read()


def _section(text: str, name: str) -> str:
    """One top-level object of a JSON file of flat string maps, as its text."""
    start = text.index('"%s"' % name)
    return text[start:text.index("}", start)]


# The files are read as text and only the pairs of one character each are
# taken out: json.loads of the whole zhconv dictionary (phrases of every
# locale) would leave ~15 MB on each worker's heap for a table of ~3 000.
_PAIR = re.compile(r'"([^"\\])": ?"([^"\\])"')


def _traditional_table() -> dict[int, str]:
    """zhconv's Traditional -> Simplified pairs of one character each (zh2Hans, zh2CN over it)."""
    text = package_file("zhconv", "zhcdict.json")
    table = {}
    for name in ("zh2Hans", "zh2CN"):
        for k, v in _PAIR.findall(_section(text, name)):
            table[ord(k)] = v
    return table


# confusables.json: {"\u03bf": [{"c": "o", "n": "LATIN SMALL LETTER O"}, ...], ...}
_CONFUSABLE = re.compile(r'"((?:\\u[0-9a-fA-F]{4})+|[^"\\])": \[([^\]]*)\]')
_TARGET = re.compile(r'"c": "([0-9A-Za-z])"')


def _homoglyph_table() -> dict[int, str]:
    """Every character Unicode lists as confusable with a Latin letter or a digit -> that
    letter; a lower-case letter with no entry of its own takes its capital's (Greek κ as Κ: K)."""
    text = package_file("confusable_homoglyphs", "confusables.json")
    found = {}
    for key, entries in _CONFUSABLE.findall(text):
        ch = json.loads('"%s"' % key)
        m = _TARGET.search(entries)
        if len(ch) == 1 and not ch.isascii() and m:
            found[ch] = m.group(1).lower()
    table = {}
    for ch, latin in found.items():
        table[ord(ch)] = latin
        low = ch.lower()
        if len(low) == 1 and low != ch and ord(low) not in table and low not in found:
            table[ord(low)] = latin
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
    # "11" is "ll" (ki11), a lone 1 an i (b1tch)
    text = _LEET_WORD.sub(lambda m: m.group().replace("11", "ll").translate(LEET) if not m.group().isalpha()
                          else m.group(), text)
    runs = [re.sub(r"[^a-z]", "", m.group()) for m in _SPELLED.finditer(text)]
    text = _SPELLED.sub(lambda m: re.sub(r"[^a-z]", "", m.group()), text)
    return _HAN_GAP.sub("", text), runs
