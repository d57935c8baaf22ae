#!/usr/bin/env python3
"""Writes (or checks) the "pinyin" of every phrase in the command table.

    .venv/bin/python tools/command_pinyin.py            # rewrite firmware/assets/commands.json
    .venv/bin/python tools/command_pinyin.py --check    # exit 1 when one is stale

esp-sr's Chinese MultiNet takes command words as toneless pinyin
syllables separated by spaces ("da kai kong tiao"); its own tool
(esp-sr tool/multinet_pinyin.py) makes them with pypinyin's lazy_pinyin,
and so does this one, offline, so the board never converts text. Only the
"pinyin" values change; the file's layout stays as written.
"""
import argparse
import json
import re
import sys
from pathlib import Path

from pypinyin import lazy_pinyin

TABLE = Path(__file__).resolve().parents[1] / "firmware" / "assets" / "commands.json"
ENTRY = re.compile(r'("phrase":\s*"([^"]+)",\s*"pinyin":\s*")([^"]*)(")')


def pinyin(phrase):
    return " ".join(lazy_pinyin(phrase))


def stale(text):
    """[(phrase, written, wanted)] for every entry whose pinyin is not pypinyin's."""
    return [(m.group(2), m.group(3), pinyin(m.group(2))) for m in ENTRY.finditer(text)
            if m.group(3) != pinyin(m.group(2))]


def rewrite(text):
    return ENTRY.sub(lambda m: m.group(1) + pinyin(m.group(2)) + m.group(4), text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="report stale entries, change nothing")
    p.add_argument("--table", default=str(TABLE))
    a = p.parse_args(argv)
    path = Path(a.table)
    text = path.read_text(encoding="utf-8")
    table = json.loads(text)
    phrases = [e["phrase"] for step in table["steps"].values() for e in step]
    if len(ENTRY.findall(text)) != len(phrases):
        print("%s: every entry must start {\"phrase\": ..., \"pinyin\": ...}" % path, file=sys.stderr)
        return 2
    bad = stale(text)
    for phrase, written, wanted in bad:
        print("%s: %r has %r, pypinyin says %r" % (path.name, phrase, written, wanted))
    if a.check:
        return 1 if bad else 0
    if bad:
        path.write_text(rewrite(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
