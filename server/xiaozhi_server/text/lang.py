"""Language guess from the script of a text, for routing voices and replies.

The one test of "is this a Han character" on the server: CJK Unified
Ideographs with extension A (U+3400-U+9FFF) and the compatibility
ideographs (U+F900-U+FAFF).
"""


def is_han(ch: str) -> bool:
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"


def has_han(text: str) -> bool:
    return any(is_han(ch) for ch in text)


def language_of(text: str, default: str = "en") -> str:
    """'zh' when the text contains Han characters, else `default`."""
    return "zh" if has_han(text) else default
