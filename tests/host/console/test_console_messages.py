"""Every word the console shows comes from its message tables, one per
language, with the same keys in each: a key the scripts name and a table
lacks would show as the key itself; a placeholder one language drops would
lose the device's name or code. Read from the files, no browser."""
import json
import re

from testkit import ROOT

CONSOLE = ROOT / "server" / "xiaozhi_server" / "console"
TABLES = {lang: json.loads((CONSOLE / "messages" / (lang + ".json")).read_text(encoding="utf-8"))
          for lang in ("zh", "en")}


def test_both_languages_have_the_same_keys_and_placeholders():
    zh, en = TABLES["zh"], TABLES["en"]
    assert sorted(zh) == sorted(en), set(zh) ^ set(en)
    for key in en:
        assert sorted(re.findall(r"\{\w+\}", zh[key])) == sorted(re.findall(r"\{\w+\}", en[key])), key
        assert zh[key].strip() and en[key].strip(), key


def test_every_key_the_scripts_name_is_in_the_tables():
    named = set()
    for path in list(CONSOLE.glob("*.js")) + list(CONSOLE.glob("pages/*.js")) + [CONSOLE / "index.html"]:
        text = path.read_text(encoding="utf-8")
        named |= {(path.name, k) for k in re.findall(r'\bt\("([a-z_.]+)"', text)}
        named |= {(path.name, k) for k in re.findall(r'data-i18n="([a-z_.]+)"', text)}
    missing = []
    for where, key in named:
        if key.endswith("."):       # a prefix the script completes: some key must start with it
            if not any(k.startswith(key) for k in TABLES["en"]):
                missing.append((where, key))
        elif key not in TABLES["en"]:
            missing.append((where, key))
    assert not missing, missing


def test_every_reason_the_api_gives_for_a_greyed_control_is_worded():
    plane = (ROOT / "server" / "xiaozhi_server" / "control" / "plane_family.py").read_text(encoding="utf-8")
    reasons = set(re.findall(r'"(voice_only|never_reported|offline|online_elsewhere|no_card)"', plane))
    assert reasons == {"voice_only", "never_reported", "offline", "online_elsewhere", "no_card"}
    for why in reasons:
        assert "greyed.why." + why in TABLES["en"]
