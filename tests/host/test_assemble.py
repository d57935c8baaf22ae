"""One composition root (assemble.py): what the family's control store lends
the sessions is handed to Services when it is built, for every role, and
no other module sets it on a Services afterwards."""
import ast

import pytest

from testkit import ROOT
from testkit.control_api import control_config
from xiaozhi_server.assemble import CONTROL, SINGLE, assemble
from xiaozhi_server.services import ControlServices, Services

PACKAGE = ROOT / "server" / "xiaozhi_server"
SHARED = ("family", "care", "conversations", "wake_floor")


def test_no_module_sets_the_shared_parts_on_services_after_it_is_built():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "services.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
            for t in targets:
                if isinstance(t, ast.Attribute) and t.attr in SHARED and "services" in ast.unparse(t.value):
                    found.append("%s:%d %s" % (path.relative_to(PACKAGE), node.lineno, ast.unparse(t)))
    assert not found, "set after construction (hand it to Services in assemble.py):\n" + "\n".join(found)


def test_a_single_process_sessions_use_the_control_planes_store(tmp_path):
    parts = assemble(control_config(tmp_path / "control.db"), SINGLE)
    services, store = parts.services, parts.control.store
    assert isinstance(services, Services)
    assert services.conversations is store.conversations and services.care is store.care
    assert services.family is parts.control.family and services.family.records is store.family
    assert services.wake_floor.records is store.wake
    assert parts.ws.device_token_ok == parts.control.devices.token_valid


def test_a_control_only_node_builds_no_voice(tmp_path):
    parts = assemble(control_config(tmp_path / "control.db"), CONTROL)
    assert type(parts.services) is ControlServices and not hasattr(parts.services, "llm")
    assert parts.services.family is parts.control.family     # the OTA answer's time zone


def test_an_unknown_role_is_named():
    with pytest.raises(ValueError, match="'primay'"):
        assemble({}, "primay")
