"""The command table's pinyin is what esp-sr's MultiNet is given on the
board (hal/esp32/voice.py sends it as is): it must be pypinyin's reading
of each phrase, as esp-sr's own tool makes it, in the form MultiNet takes."""
import json
import re
import subprocess
import sys

from testkit import ROOT

TOOL = ROOT / "tools" / "command_pinyin.py"
TABLE = ROOT / "firmware" / "assets" / "commands.json"


def test_every_phrase_has_pypinyins_reading_in_multinet_form():
    r = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    table = json.loads(TABLE.read_text(encoding="utf-8"))
    for step in table["steps"].values():
        for e in step:
            # toneless lowercase syllables, single spaces, one per Han character
            assert re.fullmatch(r"[a-z]+( [a-z]+)*", e["pinyin"]), e
            assert len(e["pinyin"].split()) == len(e["phrase"]), e


def test_a_stale_reading_is_found_and_rewritten(tmp_path):
    copy = tmp_path / "commands.json"
    text = TABLE.read_text(encoding="utf-8")
    assert '"pinyin": "qie huan mo shi"' in text
    copy.write_text(text.replace('"pinyin": "qie huan mo shi"', '"pinyin": "qie huan mo si"'), encoding="utf-8")
    r = subprocess.run([sys.executable, str(TOOL), "--check", "--table", str(copy)], capture_output=True, text=True)
    assert r.returncode == 1 and "qie huan mo si" in r.stdout
    r = subprocess.run([sys.executable, str(TOOL), "--table", str(copy)], capture_output=True, text=True)
    assert r.returncode == 0
    assert copy.read_text(encoding="utf-8") == text, "only the value changes, the layout stays"
