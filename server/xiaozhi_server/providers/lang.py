"""Language guess from the script of a text, for routing voices and replies."""


def has_cjk(text):
    for ch in text:
        if "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff":
            return True
    return False


def language_of(text, default="en"):
    """'zh' when the text contains Han characters, else `default`."""
    return "zh" if has_cjk(text) else default
