"""Split text that is too long for one TTS call, at natural boundaries.

Preference order: sentence ends, then clause marks, then spaces, then
(only for runs of CJK text with no punctuation) between two characters.
A single Latin word longer than the limit is kept whole rather than cut:
a slightly long request is better than a mispronounced half word.
"""
from .lang import is_han


SENTENCE_ENDS = "。！？!?；;…\n"
CLAUSE_MARKS = "，、,：:—"
CLOSERS = "\"'”’）)]】」』"


def _last_break(text, limit, marks):
    """Index just past the last mark within text[:limit], or -1."""
    best = -1
    for i in range(min(limit, len(text))):
        ch = text[i]
        if ch in marks or (ch == "." and marks is SENTENCE_ENDS and _ends_sentence_dot(text, i)):
            j = i + 1
            while j < len(text) and text[j] in CLOSERS:
                j += 1
            if j <= limit:
                best = j
    return best


def _ends_sentence_dot(text, i):
    # "3.14" and "e.g." do not end a sentence; ". " followed by a space does.
    nxt = text[i + 1] if i + 1 < len(text) else " "
    return nxt.isspace()


def split_for_limit(text, limit):
    """Pieces of `text`, each at most `limit` chars where possible, none cut mid-word."""
    text = text.strip()
    if limit <= 0:
        raise ValueError("limit must be positive")
    pieces = []
    while len(text) > limit:
        cut = _last_break(text, limit, SENTENCE_ENDS)
        if cut <= 0:
            cut = _last_break(text, limit, CLAUSE_MARKS)
        if cut <= 0:
            cut = text.rfind(" ", 1, limit + 1)
        if cut <= 0:
            if is_han(text[limit - 1]) and is_han(text[limit]):
                cut = limit
            else:
                # One overlong word: keep it whole up to the next space.
                nxt = text.find(" ", limit)
                cut = len(text) if nxt < 0 else nxt
        piece = text[:cut].strip()
        if piece:
            pieces.append(piece)
        text = text[cut:].strip()
    if text:
        pieces.append(text)
    return pieces
