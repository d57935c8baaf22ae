"""A setting the server does not read stops it at start, naming the key
(issue 36): `vad: {silense_ms: 300}` used to be ignored without a word, so a
parent's quieter turn timing or an API token with a typo never took effect.
Free-form maps (tokens, {language: lines}) and the environment still work."""
import copy
import glob
import inspect
import re
import subprocess
import sys

import pytest
import yaml

import testkit
from xiaozhi_server import config as configmod
from xiaozhi_server.providers import registry


def run_server(tmp_path, yaml_text):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "server.yaml").write_text(yaml_text)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(testkit.ROOT / "server")}
    # No --config: the server reads var/server.yaml of its working directory,
    # as an installed one does.
    return subprocess.run([sys.executable, "-m", "xiaozhi_server", "run"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("yaml_text,said", [
    ("vadd:\n  silence_ms: 300\n", "unknown setting vadd; did you mean vad?"),
    ("vad:\n  silense_ms: 300\n", "unknown setting vad.silense_ms; did you mean vad.silence_ms?"),
    ("control:\n  api_tokn: 'kQ3v-9xZp_2LmT7rWb4N'\n",
     "unknown setting control.api_tokn; did you mean control.api_token?"),
    # A provider section is checked against what its provider reads.
    ("tts:\n  type: espeak\n  voise: en-us\n",
     "unknown setting tts.voise (not read by tts type espeak); did you mean tts.voice?"),
    ("limits: 5\n", "limits must be a mapping of settings, got 5"),
    # A key the server reads, with a value it cannot use.
    ("vad:\n  silence_ms: abc\n", "vad.silence_ms: expected a whole number, got 'abc'"),
])
def test_a_setting_the_server_does_not_read_stops_the_start_naming_it(tmp_path, yaml_text, said):
    done = run_server(tmp_path, yaml_text)
    assert done.returncode == 2, done.stderr
    assert "server.yaml: " + said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def load(tmp_path, text, env=None):
    path = tmp_path / "server.yaml"
    path.write_text(text)
    return configmod.load(str(path), env=env or {})


def test_the_environment_still_overrides_a_checked_file(tmp_path):
    cfg = load(tmp_path, "server:\n  ws_port: 9000\nvad:\n  silence_ms: 300\n",
               env={"XIAOZHI_WS_PORT": "9100", "XIAOZHI_TOKEN": "a-token,b-token"})
    assert cfg["server"]["ws_port"] == 9100
    assert cfg["auth"]["tokens"] == ["a-token", "b-token"]
    assert cfg["vad"]["silence_ms"] == 300


def test_user_data_maps_and_lists_are_not_checked_key_by_key(tmp_path):
    cfg = load(tmp_path, "apps:\n  opener_lines: {zh: [你好], fr: [bonjour]}\n"
                         "auth:\n  allowed_devices: ['aa:bb:cc:dd:ee:ff']\n"
                         "tts:\n  type: router\n  en: {type: espeak, voice: en-us}\n")
    assert cfg["apps"]["opener_lines"]["fr"] == ["bonjour"]
    assert cfg["tts"]["en"] == {"type": "espeak", "voice": "en-us"}


def test_a_provider_of_another_type_takes_its_own_keys_and_the_pipelines(tmp_path):
    cfg = load(tmp_path, "asr:\n  type: openai\n  base_url: http://127.0.0.1:1/v1\n  language: zh\n"
                         "llm:\n  base_url: http://127.0.0.1:1/v1\n  model: m\n  temperature: 0.3\n")
    assert cfg["asr"]["base_url"] == "http://127.0.0.1:1/v1" and cfg["llm"]["temperature"] == 0.3
    with pytest.raises(configmod.ConfigError, match=r"asr.beam_size \(not read by asr type openai\)"):
        # beam_size is whisper's: an OpenAI ASR would ignore it.
        load(tmp_path, "asr:\n  type: openai\n  beam_size: 5\n")


def test_a_member_provider_is_checked_against_its_own_type(tmp_path):
    # The default tts is a fallback chain: its members are providers too.
    with pytest.raises(configmod.ConfigError, match=r"tts.providers\[1\].voise \(not read by tts type espeak\); "
                                                    r"did you mean tts.providers\[1\].voice\?"):
        load(tmp_path, "tts:\n  providers: [{type: router}, {type: espeak, voise: en-us}]\n")
    with pytest.raises(configmod.ConfigError, match=r"tts.en.modle \(not read by tts type piper\)"):
        load(tmp_path, "tts:\n  type: router\n  en: {type: piper, modle: x.onnx}\n")
    # An LLM's extra_body is the model's, whatever it holds.
    assert load(tmp_path, "llm:\n  type: openai\n  extra_body: {response_format: {type: json_object}, x: 1}\n")


def test_a_section_left_empty_changes_nothing(tmp_path):
    # The first-start file has every line commented; uncommenting only `vad:` is no change.
    assert load(tmp_path, "vad:\n")["vad"] == configmod.DEFAULTS["vad"]


def test_the_defaults_themselves_pass_the_check():
    # The first-start file uncommented whole must load.
    configmod.refuse_unknown(copy.deepcopy(configmod.DEFAULTS))


PROVIDER_READ = re.compile(r"config(?:\.get\(|\[)\"(\w+)\"|\"(\w+)\" in self\.config")


@pytest.mark.parametrize("kind,type_name", [(k, t) for k in registry.KINDS for t in registry.known_types(k)])
def test_each_provider_declares_every_key_it_reads(kind, type_name):
    # The start-up check trusts OPTIONS: a key read but not declared would be refused.
    cls = registry._registry[kind][type_name]
    sources = []
    for c in cls.__mro__:
        if not c.__module__.startswith("xiaozhi_server"):
            continue
        sources.append(inspect.getsource(c))
        # Helpers handed the config (volc_token, GateConfig, api_key_from).
        for name in re.findall(r"\b(\w+)\(config\b", sources[-1]):
            helper = getattr(sys.modules[c.__module__], name, None)
            if inspect.isfunction(helper) or inspect.isclass(helper):
                sources.append(inspect.getsource(helper))
    read = set()
    for text in sources:
        read |= {a or b for a, b in PROVIDER_READ.findall(text)}
        for names in re.findall(r"for key in \(([^)]*)\):\n[^\n]*self\.config", text):
            read |= set(re.findall(r"\"(\w+)\"", names))
    assert read - registry.options(kind, type_name) <= {"type"}, sorted(read - registry.options(kind, type_name))


def test_every_server_config_in_the_docs_loads():
    shown = 0
    for path in sorted(glob.glob(str(testkit.ROOT / "docs" / "*.md")) + [str(testkit.ROOT / "README.md")]):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for block in re.findall(r"```ya?ml\n(.*?)```", text, re.S):
            data = yaml.safe_load(block)
            if isinstance(data, dict) and set(data) & set(configmod.DEFAULTS):
                configmod.refuse_unknown(data, path)
                shown += 1
    assert shown >= 5
