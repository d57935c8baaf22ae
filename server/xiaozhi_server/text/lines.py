"""Every line the server speaks, from one data file: data/lines.json
(key -> language -> text, or a list of texts to choose from at random).

An operator changes or translates lines with a file of their own (config
`lines.file`), merged over the defaults key by key and language by
language. A bad file stops the server at start with a message naming the
file and the key: unreadable, not JSON, a key the server does not speak
(a typo would otherwise be ignored), or a text that is not a string.
A line is said in the session's language, else in English.
"""
from __future__ import annotations

import json
import os
import random

DEFAULT_PATH = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "lines.json")
# A task's own line: "task.<app>.<task>.<event>" (events: switched, started).
TASK_PREFIX = "task."


class LinesError(ValueError):
    pass


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise LinesError("cannot read the lines file %s: %s" % (path, e))
    except ValueError as e:
        raise LinesError("the lines file %s is not valid JSON: %s" % (path, e))
    if not isinstance(data, dict):
        raise LinesError("the lines file %s must hold an object of key -> {language: text}" % path)
    for key, texts in data.items():
        if not isinstance(texts, dict) or not texts:
            raise LinesError("%s: %r must be an object of language -> text" % (path, key))
        for lang, text in texts.items():
            ok = isinstance(text, str) or (isinstance(text, list) and all(isinstance(t, str) for t in text))
            if not ok:
                raise LinesError("%s: %s.%s must be a text or a list of texts" % (path, key, lang))
    return data


class Lines:
    def __init__(self, table: dict) -> None:
        self.table = table

    @classmethod
    def load(cls, operator_path: str | None = None) -> Lines:
        table = _read(DEFAULT_PATH)
        if operator_path is not None and not isinstance(operator_path, str):
            raise LinesError("lines.file must be the path of a JSON file, not %r" % (operator_path,))
        if operator_path:
            for key, texts in _read(operator_path).items():
                if key not in table and not key.startswith(TASK_PREFIX):
                    raise LinesError("%s: %r is not a line the server speaks (lines: %s)"
                                     % (operator_path, key, ", ".join(sorted(table))))
                table[key] = dict(table.get(key, {}), **texts)
        return cls(table)

    def choices(self, key: str, language: str) -> list[str]:
        """Every text of the line in the language (else English); [] for none."""
        texts = self.table.get(key) or {}
        found = texts.get(language)
        if found is None:
            found = texts.get("en")
        if found is None:
            return []
        return [found] if isinstance(found, str) else list(found)

    def get(self, key: str, language: str) -> str:
        """The line (one of its texts at random); KeyError if the file has none."""
        options = self.choices(key, language)
        if not options:
            raise KeyError("no line %r in %s" % (key, language))
        return random.choice(options)

    def task_line(self, task_key: str, event: str, language: str) -> str | None:
        """A task's line for an event (switched, started), or None."""
        options = self.choices("%s%s.%s" % (TASK_PREFIX, task_key, event), language)
        return random.choice(options) if options else None
