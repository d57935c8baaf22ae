"""What the safety filter knows of words, apart from any session:

    normalize.py  fold(): one spelling for a text (width, case, zero-width
                  and bidi marks, Traditional, homoglyphs, leet, separators)
    matcher.py    Matcher: a word list found in a folded text (English
                  stems, Chinese with compounds masked, pinyin and sounds)
    terms.json    the built-in synonyms, compounds, insults

The session's stage that uses them is pipeline/safety.py; the parents'
API reads expansions() to show what each topic also blocks.
"""
from .matcher import Folded, Matcher, expansions, insults
from .normalize import fold, fold_tables

__all__ = ["Folded", "Matcher", "expansions", "fold", "fold_tables", "insults"]
