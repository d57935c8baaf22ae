"""The lessons on a device's SD card, as its self.mp3.get_list tool reports them.

Shared by everything that reads the list (start_repeater, a task started
with a lesson name), so both answer shapes are understood in one place.
"""
import json
import re


def lesson_names(text: str) -> list[str]:
    """The file names in a self.mp3.get_list answer. The Sening board lists
    objects ({"files": [{"name": "lesson001.mp3", ...}]}), older devices bare
    names; entries of neither shape are skipped, an unreadable answer is no files."""
    try:
        files = json.loads(text).get("files")
    except (ValueError, AttributeError):
        return []
    names = []
    for f in files if isinstance(files, list) else ():
        name = f.get("name") if isinstance(f, dict) else f
        if isinstance(name, str) and name:
            names.append(name)
    return names


# A number as a child says it, or a model writes what the child said.
NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty".split())}
NUMBER_WORDS.update({c: str(i) for i, c in enumerate("零一二三四五六七八九十")})
NUMBER_WORDS["两"] = "2"


def match_lesson(name: str, files: list[str]) -> str | None:
    """The listed file the child meant: exact, or without .mp3, or another
    case; else the one file whose name is the same words and numbers
    ("lesson one", "lesson001", "Lesson_1" for lesson1.mp3)."""
    if name in files:
        return name
    want = name.strip().lower()
    for f in files:
        low = f.lower()
        if low == want or low == want + ".mp3" or low.rsplit(".", 1)[0] == want:
            return f
    key = _key(want)
    alike = [f for f in files if _key(f.lower()) == key]
    return alike[0] if key and len(alike) == 1 else None


def _key(name: str) -> tuple[str, ...]:
    """A name as words and numbers: extension, separators and leading zeros
    left out, number words as digits."""
    if name.endswith(".mp3"):
        name = name[:-4]
    parts = re.findall(r"[a-z]+|\d+|[\u4e00-\u9fff]", name)
    return tuple(str(int(p)) if p.isdigit() else NUMBER_WORDS.get(p, p) for p in parts)
