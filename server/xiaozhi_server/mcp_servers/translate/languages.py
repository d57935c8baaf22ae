"""Which language a text is in, and which way to translate it.

Direction: Chinese goes to English; English and every other language go to
Chinese. A caller may name either side; what it leaves out is filled in.

Detection is deliberately cheap (no model, no download), by script:
kana → Japanese, Hangul → Korean, Han → Chinese (kana is checked first, so
Japanese with kanji is not taken for Chinese), Cyrillic → Russian, and so
on for a few other scripts. Latin letters are English unless a handful of
common words (or ñ ¿ ¡ ß) clearly mark French, German, Spanish, Italian
or Portuguese. A wrong guess between two Latin languages only changes the
source name given to the model; both still go to Chinese.
"""
import re

from ...text.lang import is_han

# Codes the tool understands, with the names the model is told.
NAMES = {
    "zh": "Simplified Chinese (简体中文)",
    "en": "English",
    "ja": "Japanese",
    "ko": "Korean",
    "fr": "French",
    "de": "German",
    "es": "Spanish",
    "it": "Italian",
    "pt": "Portuguese",
    "ru": "Russian",
    "ar": "Arabic",
    "th": "Thai",
    "hi": "Hindi",
    "el": "Greek",
    "he": "Hebrew",
    "vi": "Vietnamese",
}

# What callers (or an LLM filling the arguments) may write for a language.
_ALIASES = {
    "chinese": "zh", "mandarin": "zh", "中文": "zh", "汉语": "zh", "普通话": "zh", "cmn": "zh",
    "english": "en", "英文": "en", "英语": "en",
    "japanese": "ja", "日语": "ja", "korean": "ko", "韩语": "ko",
    "french": "fr", "法语": "fr", "german": "de", "德语": "de", "spanish": "es", "西班牙语": "es",
    "italian": "it", "portuguese": "pt", "russian": "ru", "俄语": "ru", "arabic": "ar",
    "thai": "th", "hindi": "hi", "greek": "el", "hebrew": "he", "vietnamese": "vi",
}

# Unicode ranges per script, checked in this order after kana/Hangul/Han.
_SCRIPTS = (
    ("ru", "\u0400", "\u04ff"),
    ("el", "\u0370", "\u03ff"),
    ("he", "\u0590", "\u05ff"),
    ("ar", "\u0600", "\u06ff"),
    ("hi", "\u0900", "\u097f"),
    ("th", "\u0e00", "\u0e7f"),
)

# Short, frequent words that English does not use, per Latin-script language.
_MARKER_WORDS = {
    "fr": {"le", "les", "des", "est", "une", "et", "je", "vous", "nous", "pas", "qui", "dans",
           "avec", "c'est", "ça", "bonjour", "merci", "oui", "très", "suis", "mon", "du"},
    "de": {"der", "das", "und", "ist", "nicht", "ich", "du", "wir", "ein", "eine", "mit", "auf",
           "für", "zu", "dem", "danke", "ja", "bin", "guten", "tag", "hallo", "wie", "geht"},
    "es": {"el", "los", "las", "es", "y", "por", "para", "con", "una", "hola", "gracias", "está",
           "muy", "pero", "qué", "cómo", "estoy", "soy", "buenos", "días"},
    "it": {"il", "gli", "della", "che", "non", "sono", "ciao", "grazie", "è", "molto", "come",
           "stai", "bene", "buongiorno", "io", "di"},
    "pt": {"os", "não", "um", "uma", "obrigado", "obrigada", "olá", "você", "com", "muito",
           "tudo", "bem", "bom", "dia", "eu", "estou"},
}
_ENGLISH_WORDS = {"the", "is", "are", "and", "you", "i", "to", "of", "a", "in", "it", "what",
                  "this", "that", "my", "me", "how", "do", "can", "please", "hello", "good"}
_MARKER_CHARS = {"ñ": "es", "¿": "es", "¡": "es", "ß": "de"}
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def normalize(lang):
    """A language code ('zh', 'en', 'fr'...) from what a caller wrote, or None if empty.

    'zh-CN', 'en_US', 'English' and '中文' all work; an unknown code is kept
    as written (lower case), so the model can still be told about it.
    """
    if not lang:
        return None
    raw = str(lang).strip()
    if not raw:
        return None
    low = raw.lower()
    if low in _ALIASES:
        return _ALIASES[low]
    primary = re.split(r"[-_\s]", low)[0]
    if primary in NAMES:
        return primary
    return _ALIASES.get(primary, low)


def name_of(code):
    """The language name told to the model."""
    return NAMES.get(code, code)


def _latin_language(text):
    low = text.lower()
    words = _WORD.findall(low)
    scores = dict.fromkeys(_MARKER_WORDS, 0)
    for ch, lang in _MARKER_CHARS.items():
        if ch in low:
            scores[lang] += 2
    english = 0
    for word in words:
        if word in _ENGLISH_WORDS:
            english += 1
        for lang, markers in _MARKER_WORDS.items():
            if word in markers:
                scores[lang] += 1
    best = max(scores, key=scores.get)
    # "Clearly": two marks at least, and more than the English evidence.
    if scores[best] >= 2 and scores[best] > english:
        return best
    return "en"


def detect(text):
    """The language code of `text`, by script (see the module docstring)."""
    kana = hangul = han = latin = 0
    others = {code: 0 for code, _, _ in _SCRIPTS}
    for ch in text:
        if "\u3040" <= ch <= "\u30ff":
            kana += 1
        elif "\uac00" <= ch <= "\ud7af" or "\u1100" <= ch <= "\u11ff":
            hangul += 1
        elif is_han(ch):
            han += 1
        elif ch.isalpha() and ch < "\u0370":
            latin += 1
        else:
            for code, lo, hi in _SCRIPTS:
                if lo <= ch <= hi:
                    others[code] += 1
                    break
    if kana:
        return "ja"
    if hangul:
        return "ko"
    if han:
        return "zh"
    best = max(others, key=others.get)
    if others[best] > latin:
        return best
    if latin:
        return _latin_language(text)
    return "en"


def direction(text, source_lang=None, target_lang=None):
    """(source, target) codes: given values win, the rest follows zh→en, else →zh."""
    source = normalize(source_lang) or detect(text)
    target = normalize(target_lang)
    if target is None:
        target = "en" if source == "zh" else "zh"
    return source, target
