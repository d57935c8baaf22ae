"""Every example message in shared/protocol/examples is judged the same way
by the generated validators (which both sides run) and by jsonschema, and
invalid ones are refused with a reason a person can act on."""
import json

import jsonschema
import pytest

from testkit import ROOT
from xiaozhi_server import protocol
from xiaozhi_server.protocol.schemas import SCHEMAS as FULL

EXAMPLES = ROOT / "shared" / "protocol" / "examples"


def schema_id(dirname):
    # tool_<name>/ holds a device tool's arguments, result_<name>/ its answers.
    for prefix in ("tool", "result"):
        if dirname.startswith(prefix + "_"):
            return prefix + ":" + dirname[len(prefix) + 1:]
    return dirname


def examples(kind):
    out = []
    for d in sorted(EXAMPLES.iterdir()):
        for f in sorted(d.glob(kind + "-*.json")):
            out.append(pytest.param(schema_id(d.name), json.loads(f.read_text()), id="%s/%s" % (d.name, f.stem)))
    return out


FORMATS = jsonschema.FormatChecker()
for _name in ("identifier", "sd_name", "hh:mm"):
    # jsonschema knows none of our formats: check them with the generated code,
    # so the cross-check still covers every other keyword independently.
    FORMATS.checks(_name)(lambda v, _n=_name: not isinstance(v, str) or protocol._format_error(_n, v) is None)


def jsonschema_errors(sid, msg):
    v = jsonschema.Draft202012Validator(FULL[sid], format_checker=FORMATS)
    return [e.message for e in v.iter_errors(msg)]


@pytest.mark.parametrize("sid,msg", examples("ok"))
def test_valid_examples_pass(sid, msg):
    assert protocol.validate(sid, msg) is None
    assert jsonschema_errors(sid, msg) == []


@pytest.mark.parametrize("sid,case", examples("bad"))
def test_invalid_examples_are_refused_with_a_reason(sid, case):
    reason = protocol.validate(sid, case["message"])
    assert reason is not None, "accepted an invalid message"
    assert case["reason"] in reason
    assert jsonschema_errors(sid, case["message"]), "jsonschema disagrees: it accepts this"


def test_every_websocket_message_type_has_examples():
    covered = {d.name for d in EXAMPLES.iterdir()}
    for key, sid in protocol.WS_SCHEMAS.items():
        if key.startswith("iot:"):
            continue  # legacy, accepted and ignored
        assert sid in covered, "no examples for %s" % sid


def test_full_schemas_are_valid_json_schema():
    for sid, s in FULL.items():
        jsonschema.Draft202012Validator.check_schema(s)


def test_app_registry_fits_its_schema():
    apps = json.loads((ROOT / "server" / "xiaozhi_server" / "data" / "apps.json").read_text())
    assert protocol.validate("registry.apps", apps) is None
    assert jsonschema_errors("registry.apps", apps) == []
    for app in apps["apps"]:
        for task in app["tasks"]:
            assert protocol.unsupported_keywords(task.get("params_schema", {})) == []


def test_app_registry_refuses_a_task_without_tools_under_allowlist():
    apps = json.loads((ROOT / "server" / "xiaozhi_server" / "data" / "apps.json").read_text())
    del apps["apps"][2]["tasks"][0]["tools"]
    assert "missing required field 'tools'" in protocol.validate("registry.apps", apps)


def test_device_tools_declare_the_tools_of_the_design():
    names = [t["name"] for t in protocol.device_tools()]
    assert names == list(protocol.DEVICE_TOOL_NAMES)
    for n in ("self.get_device_status", "self.audio_speaker.set_volume", "self.mp3.play",
              "self.mp3.stop", "self.mp3.get_list", "self.mp3.get_status", "self.power_off"):
        assert n in names
    play = next(t for t in protocol.device_tools() if t["name"] == "self.mp3.play")
    props = play["inputSchema"]["properties"]
    assert props["repeat"]["default"] == 1 and props["repeat"]["minimum"] == 1
    assert props["power_off_after"]["default"] is False


def test_unknown_tool_is_flagged_unknown():
    with pytest.raises(protocol.ProtoError) as e:
        protocol.check_tool_args("self.camera.take_photo", {})
    assert e.value.unknown and "unknown tool" in str(e.value)


def test_priorities_follow_the_design():
    p = protocol.SOURCE_PRIORITY
    assert p["mqtt_immediate"] > p["schedule"] > p["voice"] > p["default_chat"] == 0
    assert set(p) == set(protocol.SOURCES)
