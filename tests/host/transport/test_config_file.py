"""The server's settings file: written on first start with every default
shown but commented out, so a later version's defaults reach an install
that never changed them; a provider section a user edits keeps the keys
they did not write."""
from xiaozhi_server import config as configmod


def test_the_first_start_file_shows_the_defaults_and_pins_none_of_them(tmp_path):
    path = tmp_path / "var" / "server.yaml"
    cfg = configmod.load(str(path), env={})
    text = path.read_text()
    assert "silence_ms: %d" % configmod.DEFAULTS["vad"]["silence_ms"] in text
    assert all(line.startswith("#") for line in text.splitlines() if line.strip())
    assert cfg == configmod.load(str(path), env={}) == configmod.merge(configmod.DEFAULTS, {})


def test_an_uncommented_setting_is_used_and_the_rest_follow_the_defaults(tmp_path):
    path = tmp_path / "server.yaml"
    path.write_text("vad:\n  silence_ms: 300\n")
    vad = configmod.load(str(path), env={})["vad"]
    assert vad["silence_ms"] == 300
    assert vad["type"] == "silero"
    assert vad["commit_question_ms"] == configmod.DEFAULTS["vad"]["commit_question_ms"]


def test_a_provider_section_of_another_type_replaces_the_default_whole(tmp_path):
    path = tmp_path / "server.yaml"
    path.write_text("tts:\n  type: piper\n")
    assert configmod.load(str(path), env={})["tts"] == {"type": "piper"}
