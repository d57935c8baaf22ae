"""Streaming sentence segmentation of LLM text for TTS, Chinese and English.

Feed text deltas as they arrive; whole sentences come out as soon as
their end is certain. To start speaking early, the first piece of a reply
may end at a clause mark (，, 、 : ;) once it has `first_clause_min`
units (a unit is one Han character or one Latin word); later pieces end
only at sentence ends, unless a sentence grows past `max_units`, when it
is broken at its next clause mark.

A "." ends a sentence only when whitespace (or Han text) follows and the
word before it is not an abbreviation ("Mr.", "e.g.") or an initial
("J."); "3.14" and "1,000" are never split. Because the character after an
end mark decides, a sentence is emitted when the next delta arrives (or at
`flush()`), which costs one token of delay at most.
"""
from ..text.lang import is_han


HARD_ENDS = "。！？!?；;…\n"
CLAUSE_MARKS = "，、,：:"
CLOSERS = "\"'”’）)]】」』"
ABBREVIATIONS = frozenset((
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "mt",
    "inc", "ltd", "co", "no", "approx", "dept", "u.s", "u.k", "a.m", "p.m", "fig", "ca",
))


def units(text: str) -> int:
    """Han characters plus Latin/digit words: a rough measure of speaking time."""
    n = 0
    in_word = False
    for ch in text:
        if is_han(ch):
            n += 1
            in_word = False
        elif ch.isalnum():
            if not in_word:
                n += 1
            in_word = True
        else:
            in_word = False
    return n


def _speakable(text):
    for ch in text:
        if ch.isalnum() or is_han(ch):
            return True
    return False


class SentenceSegmenter:
    def __init__(self, first_clause_min: int = 6, max_units: int = 40) -> None:
        self.first_clause_min = first_clause_min
        self.max_units = max_units
        self._buf = ""
        self._pos = 0  # next index of _buf to examine
        self._emitted = 0

    def reset(self) -> None:
        self._buf = ""
        self._pos = 0
        self._emitted = 0

    def feed(self, delta: str) -> list[str]:
        """Sentences completed by this delta (possibly none)."""
        self._buf += delta
        return self._scan(final=False)

    def flush(self) -> list[str]:
        """Whatever is left at the end of the reply, as the last sentence."""
        out = self._scan(final=True)
        rest = self._buf.strip()
        self._buf = ""
        self._pos = 0
        if _speakable(rest):
            out.append(rest)
            self._emitted += 1
        return out

    def _dot_ends(self, i):
        buf = self._buf
        nxt = buf[i + 1]
        if not (nxt.isspace() or is_han(nxt) or nxt in CLOSERS):
            return False  # 3.14, e.g, example.com, or "..." still going
        j = i
        while j > 0 and (buf[j - 1].isalpha() or buf[j - 1] == "."):
            j -= 1
        word = buf[j:i]
        if word.lower() in ABBREVIATIONS:
            return False
        if len(word) == 1 and word.isupper() and word != "I":
            return False  # an initial: J. K. Rowling
        return True

    def _boundary(self, i):
        """End index of a piece ending at buf[i], or -1. Needs buf[i+1] to exist."""
        buf = self._buf
        ch = buf[i]
        if ch in HARD_ENDS:
            pass
        elif ch == ".":
            if not self._dot_ends(i):
                return -1
        elif ch in CLAUSE_MARKS:
            if ch in ",:" and buf[i - 1:i].isdigit() and buf[i + 1].isdigit():
                return -1  # 1,000 or 10:30
            n = units(buf[:i])
            limit = self.first_clause_min if self._emitted == 0 else self.max_units
            if n < limit:
                return -1
        else:
            return -1
        end = i + 1
        while end < len(buf) and buf[end] in CLOSERS:
            end += 1
        if end == len(buf) and buf[i] != "\n":
            return -2  # a closing quote may still follow: wait
        return end

    def _scan(self, final):
        out = []
        i = self._pos
        while True:
            stop = len(self._buf) if final else len(self._buf) - 1
            if i >= stop:
                break
            if final and i == len(self._buf) - 1:
                break  # the last char: flush() takes the rest as it is
            end = self._boundary(i)
            if end == -2:
                break
            if end < 0:
                i += 1
                continue
            piece = self._buf[:end]
            if not _speakable(piece):
                i = end
                continue  # pure punctuation: keep it with the next sentence
            self._buf = self._buf[end:]
            i = 0
            piece = piece.strip()
            out.append(piece)
            self._emitted += 1
        self._pos = i
        return out
