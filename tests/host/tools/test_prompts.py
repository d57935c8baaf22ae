"""The lines the device says by itself (tools/render_prompts.py): the files
in firmware/assets/prompts match the command table's text, every frame
reads back, and a changed line is caught."""
import json
import struct

from testkit import ROOT
from render_prompts import main as render_main, lines, text_of

PROMPTS = ROOT / "firmware" / "assets" / "prompts"
COMMANDS = ROOT / "firmware" / "assets" / "commands.json"


def test_the_rendered_lines_match_the_command_table_and_read_back():
    assert render_main(["--check"]) == 0
    index = json.loads((PROMPTS / "index.json").read_text(encoding="utf-8"))
    table = json.loads(COMMANDS.read_text(encoding="utf-8"))
    for (key, lang), segs in lines(table).items():
        data = (PROMPTS / ("%s.%s.opus" % (key, lang))).read_bytes()
        frames, at = 0, 0
        while at < len(data):
            (n,) = struct.unpack_from(">H", data, at)
            assert 0 < n <= 512
            at += 2 + n
            frames += 1
        assert at == len(data) and frames == index[key][lang]["frames"]
        assert index[key][lang]["text"] == text_of(segs)
    assert "打开翻译" in index["voice_entry"]["en"]["text"]


def test_a_changed_line_is_reported_stale(tmp_path):
    table = json.loads(COMMANDS.read_text(encoding="utf-8"))
    table["prompts"]["menu_timeout"]["zh"] = ["换一句话。"]
    path = tmp_path / "commands.json"
    path.write_text(json.dumps(table, ensure_ascii=False), encoding="utf-8")
    assert render_main(["--check", "--commands", str(path), "--out", str(PROMPTS)]) == 1
