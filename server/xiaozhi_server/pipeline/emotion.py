"""The emotion of a reply, from the emoji the model puts first.

The device shows one of the xiaozhi emotions per turn (`llm` message).
The model is asked to begin with an emoji; it is shown, not spoken.
"""
from .. import protocol as proto

EMOJI_EMOTION = {
    "😶": "neutral", "🙂": "happy", "😊": "happy", "😀": "happy", "😃": "happy", "😄": "happy",
    "😆": "laughing", "😂": "laughing", "🤣": "laughing", "😹": "funny", "🤪": "silly",
    "😢": "sad", "😔": "sad", "😞": "sad", "😠": "angry", "😡": "angry", "😭": "crying",
    "😍": "loving", "🥰": "loving", "❤": "loving", "😳": "embarrassed", "😲": "surprised",
    "😮": "surprised", "😱": "shocked", "🤔": "thinking", "😉": "winking", "😎": "cool",
    "😌": "relaxed", "🤤": "delicious", "😋": "delicious", "😘": "kissy", "😏": "confident",
    "💪": "confident", "😴": "sleepy", "😪": "sleepy", "🤨": "confused", "😕": "confused",
}
EMOTION_EMOJI: dict[str, str] = {}
for _e, _name in EMOJI_EMOTION.items():
    EMOTION_EMOJI.setdefault(_name, _e)
assert set(EMOTION_EMOJI) <= set(proto.EMOTIONS)


def _is_emoji(ch):
    o = ord(ch)
    return 0x1F300 <= o <= 0x1FAFF or 0x2600 <= o <= 0x27BF or o in (0xFE0F, 0x200D)


def split_emotion(text: str) -> tuple[str | None, str]:
    """(emotion or None, text without leading emoji) of the start of a reply."""
    s = text.lstrip()
    emotion = None
    i = 0
    while i < len(s) and _is_emoji(s[i]):
        if emotion is None:
            emotion = EMOJI_EMOTION.get(s[i])
        i += 1
    if i == 0:
        return None, text
    return emotion or "happy", s[i:].lstrip()


def strip_emoji(text: str) -> str:
    """Text without emoji: TTS would read their names aloud."""
    return "".join(c for c in text if not _is_emoji(c))
