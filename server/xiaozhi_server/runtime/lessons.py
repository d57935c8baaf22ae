"""The lessons on a device's SD card, as its self.mp3.get_list tool reports them.

Shared by everything that reads the list (start_repeater, a task started
with a lesson name), so both answer shapes are understood in one place.
"""
import json


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


def match_lesson(name: str, files: list[str]) -> str | None:
    """The listed file the child meant: exact, or without .mp3, or another case."""
    if name in files:
        return name
    want = name.strip().lower()
    for f in files:
        low = f.lower()
        if low == want or low == want + ".mp3" or low.rsplit(".", 1)[0] == want:
            return f
    return None
