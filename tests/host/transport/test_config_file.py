"""The server's settings file: written on first start with every default
shown but commented out, each under its doc, so a later version's defaults
reach an install that never changed them; a provider section a user edits
keeps the keys they did not write; a value of the wrong type stops the
start naming its path and the type expected."""
import asyncio
import os
import re
import signal
import sys

import pytest
import yaml

import testkit
from testkit.child_procs import children, wait_gone
from testkit.mosquitto import free_port
from xiaozhi_server import config as configmod


def uncommented(text):
    """The file as a parent who uncomments every line would leave it."""
    return "\n".join(re.sub(r"^# ?", "", line) for line in text.splitlines())


def test_the_first_start_file_shows_the_defaults_and_pins_none_of_them(tmp_path):
    path = tmp_path / "var" / "server.yaml"
    cfg = configmod.load(str(path), env={})
    text = path.read_text()
    assert "silence_ms: %d" % configmod.DEFAULTS["vad"]["silence_ms"] in text
    assert all(line.startswith("#") for line in text.splitlines() if line.strip())
    assert cfg == configmod.load(str(path), env={}) == configmod.merge(configmod.DEFAULTS, {})


def test_every_setting_is_written_under_its_doc_and_uncommented_the_file_is_the_defaults(tmp_path):
    path = tmp_path / "server.yaml"
    configmod.write_defaults(str(path))
    text = path.read_text()
    whole = uncommented(text)
    assert yaml.safe_load(whole) == configmod.DEFAULTS
    # The file uncommented whole loads, its docs staying comments.
    path.write_text(whole)
    assert configmod.load(str(path), env={}) == configmod.merge(configmod.DEFAULTS, {})
    lines = text.splitlines()
    for cls in configmod.SECTIONS:
        for key, doc in cls.docs().items():
            assert doc, "%s.%s has no doc" % (cls.NAME, key)
            first = "#   # " + doc.split()[0]
            at = [i for i, line in enumerate(lines) if line.startswith("#   %s:" % key)
                  and any(lines[j].startswith(first) for j in range(max(0, i - 6), i))]
            assert at or key not in cls.defaults(), "%s.%s is not shown under its doc" % (cls.NAME, key)
            assert any(line.startswith(first) for line in lines), "%s.%s's doc is not written" % (cls.NAME, key)


def test_an_uncommented_setting_is_used_and_the_rest_follow_the_defaults(tmp_path):
    path = tmp_path / "server.yaml"
    path.write_text("vad:\n  silence_ms: 300\n")
    cfg = configmod.load(str(path), env={})
    vad = cfg["vad"]
    assert vad["silence_ms"] == 300
    assert vad["type"] == "silero"
    assert vad["commit_question_ms"] == configmod.DEFAULTS["vad"]["commit_question_ms"]
    # A component reads its section typed: the file's value, and the defaults for the rest.
    typed = configmod.VadConfig.of(cfg)
    assert (typed.silence_ms, typed.commit_question_ms) == (300, configmod.VadConfig().commit_question_ms)


def test_a_provider_section_of_another_type_replaces_the_default_whole(tmp_path):
    path = tmp_path / "server.yaml"
    path.write_text("tts:\n  type: piper\n")
    assert configmod.load(str(path), env={})["tts"] == {"type": "piper"}


@pytest.mark.parametrize("yaml_text,said", [
    ("vad:\n  silence_ms: abc\n", "vad.silence_ms: expected a whole number, got 'abc'"),
    ("vad:\n  threshold: high\n", "vad.threshold: expected a number, got 'high'"),
    ("session:\n  idle_timeout_s: true\n", "session.idle_timeout_s: expected a number, got True"),
    ("session:\n  wake_words: [小智, 7]\n", "session.wake_words: expected a list of texts, got ['小智', 7]"),
    ("apps:\n  opener: song\n", "apps.opener: expected \"lines\" or \"llm\", got 'song'"),
    ("mqtt:\n  url: 1883\n", "mqtt.url: expected text or nothing (null), got 1883"),
    ("asr:\n  type: openai\n  language: [zh]\n", "asr.language: expected text or nothing (null), got ['zh']"),
])
def test_a_value_of_the_wrong_type_names_its_path_and_the_type_expected(tmp_path, yaml_text, said):
    path = tmp_path / "server.yaml"
    path.write_text(yaml_text)
    with pytest.raises(configmod.ConfigError) as refused:
        configmod.load(str(path), env={})
    assert str(refused.value) == "%s: %s" % (path, said)


def test_a_section_refuses_a_key_it_does_not_hold_even_built_from_a_dict():
    with pytest.raises(configmod.ConfigError, match="unknown setting session.idle_timout_s; "
                                                    "did you mean session.idle_timeout_s"):
        configmod.SessionConfig.of({"session": {"idle_timout_s": 5}})
    # A provider section holds its provider's keys too: they are checked against its OPTIONS at load.
    assert configmod.VadConfig.of({"vad": {"gate": False, "silence_ms": 200}}).silence_ms == 200


async def make_run(directory):
    """`xiaozhi-server run` as `make run` starts it, in `directory`, on the test's
    own ports (the environment overrides, as documented) and no outside model."""
    env = dict(os.environ, PYTHONPATH=str(testkit.ROOT / "server"), XIAOZHI_WS_PORT="0", XIAOZHI_HTTP_PORT="0",
               XIAOZHI_MQTT_PORT=str(free_port()), XIAOZHI_WORKERS="1")
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "XIAOZHI_TOKEN", "XIAOZHI_HOST", "MQTT_URL"):
        env.pop(name, None)
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "xiaozhi_server", "run", cwd=directory, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def test_make_run_in_an_empty_directory_writes_the_documented_file_and_starts(tmp_path):
    # What `make run` does, in a fresh directory: no var/server.yaml yet.
    proc = await make_run(tmp_path)
    try:
        said = []
        while not any("config    : var/server.yaml" in line for line in said):
            line = await asyncio.wait_for(proc.stdout.readline(), 300)
            assert line, "the server ended: %s" % (await proc.stderr.read()).decode()
            said.append(line.decode())
        text = (tmp_path / "var" / "server.yaml").read_text()
    finally:
        proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.wait(), 120)
    # The parent who opens the file reads each setting under what it does.
    assert "#   # Silence that ends a turn speculatively (ASR runs, the reply is prepared).\n" \
           "#   silence_ms: 160\n" in text
    assert "## Who may connect a device.\n# auth:\n" in text
    assert yaml.safe_load(uncommented(text)) == configmod.DEFAULTS


async def test_ctrl_c_while_the_server_starts_stops_it_and_its_broker(tmp_path):
    """Ctrl-C while `make run` is still starting (its broker up, the voice
    providers loading) ends the server and the mosquitto it started: nothing
    is left holding the ports for the next `make run`."""
    proc = await make_run(tmp_path)
    try:
        logged = b""
        while b"started mosquitto" not in logged:
            line = await asyncio.wait_for(proc.stderr.readline(), 300)
            assert line, "the server ended before its broker started: %s" % logged.decode()
            logged += line
        broker = children(proc.pid, "mosquitto")
        assert broker, "no mosquitto child: %s" % logged.decode()
        proc.send_signal(signal.SIGINT)
        out = (await asyncio.wait_for(proc.stdout.read(), 120)).decode()
        assert await asyncio.wait_for(proc.wait(), 60) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert "xiaozhi-server stopping" in out and "xiaozhi-server running" not in out
    for pid in broker:
        assert await asyncio.to_thread(wait_gone, pid, 30), "the broker %d outlived the server" % pid


def test_every_environment_override_sets_a_typed_setting(tmp_path):
    sections = {cls.NAME: cls for cls in configmod.SECTIONS}
    for var, (section, key, _conv) in configmod.ENV_OVERRIDES.items():
        assert key in sections[section].docs(), "%s sets %s.%s, which no section holds" % (var, section, key)
    # What an override gives passes the type check too.
    cfg = configmod.load(str(tmp_path / "none.yaml"), write_default=False,
                         env={"XIAOZHI_WORKERS": "3", "XIAOZHI_MQTT_PORT": "1999", "XIAOZHI_TOKEN": "a-token"})
    assert configmod.ServerConfig.of(cfg).workers == 3 and configmod.MqttConfig.of(cfg).port == 1999
    assert configmod.worker_count(cfg) == 3
