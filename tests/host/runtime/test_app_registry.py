"""A bad app registry stops the server with a message that names the field."""
import json
import subprocess
import sys

import pytest

from testkit import ROOT
from xiaozhi_server.runtime.registry import Registry, RegistryError

SHIPPED = json.loads((ROOT / "server" / "xiaozhi_server" / "data" / "apps.json").read_text())


def broken(edit):
    data = json.loads(json.dumps(SHIPPED))
    edit(data)
    return data


@pytest.mark.parametrize("edit,named", [
    (lambda d: d["apps"][1]["tasks"][0].__setitem__("interaction_mode", "KARAOKE"), "apps[1].tasks[0].interaction_mode"),
    (lambda d: d["apps"][2]["tasks"][0].pop("tools"), "missing required field 'tools'"),
    (lambda d: d.__setitem__("default_app", "games"), "default_app 'games'"),
    (lambda d: d["apps"][0].__setitem__("default_task", "nap"), "apps[0].default_task 'nap'"),
    (lambda d: d["apps"].append(d["apps"][0]), "apps[3].id 'chat' is used twice"),
    (lambda d: d["apps"][1]["tasks"][0]["params_schema"].__setitem__("patternProperties", {}), "patternProperties"),
])
def test_bad_registry_names_the_field(edit, named):
    with pytest.raises(RegistryError) as e:
        Registry(broken(edit))
    assert named in str(e.value)


def test_shipped_registry_has_the_three_apps():
    r = Registry.load()
    assert r.default().key == "chat.conversation"
    assert r.find("english_learning").key == "english_learning.repeater"
    assert r.find("english_translation").mode == "TRANSLATION"
    assert r.find("english_learning", "idiom_chain").reserved


def bad_seed():
    # The seed plan's spelling (test_seed_registry.py): errors name its fields too.
    data = json.loads((ROOT / "tests" / "host" / "runtime" / "data" / "seed_apps.json").read_text(encoding="utf-8"))
    data["apps"]["chat"]["tool_policy"] = "all"
    return data


@pytest.mark.parametrize("data,named", [
    (lambda: broken(lambda d: d["apps"][0]["tasks"][0].__setitem__("tool_policy", "all")), "tasks[0].tool_policy"),
    (bad_seed, "apps.chat.tool_policy"),
], ids=["ours", "seed"])
def test_server_refuses_to_start_on_a_bad_registry(tmp_path, data, named):
    bad = tmp_path / "apps.json"
    bad.write_text(json.dumps(data()))
    cfg = tmp_path / "server.yaml"
    cfg.write_text("apps:\n  registry: %s\nserver:\n  ws_port: 0\n  http_port: 0\nmqtt:\n  url: mqtt://127.0.0.1:1\n" % bad)
    p = subprocess.run([sys.executable, "-m", "xiaozhi_server", "run", "--config", str(cfg)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert named in p.stderr
    assert "Traceback" not in p.stderr
