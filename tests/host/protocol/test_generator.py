"""The generated code is committed; it must match the schemas, and the
generator must refuse schema keywords the validators would not check."""
import subprocess
import sys

import pytest

from testkit import ROOT

sys.path.insert(0, str(ROOT / "shared" / "protocol"))
import generate  # noqa: E402


def test_generated_files_are_fresh():
    p = subprocess.run([sys.executable, "shared/protocol/generate.py", "--check"], cwd=ROOT,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def _without_table(text):
    """The code, without the constants and tables (compared by value below:
    the server's copy wraps long lines, the board's keeps one per value)."""
    start = text.index("\n# ---- constants ----")
    end = text.index("\n# ---- builders")
    return text[:start] + text[end:]


def _values(text):
    """{name: parsed value} of the module-level constants and tables, but for
    the schema table and its names (the board's leave host-only ones out)."""
    import ast
    tree = ast.parse(text)
    return {node.targets[0].id: ast.dump(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id not in ("SCHEMAS", "_NAMES")}


def test_both_sides_run_the_same_generated_code():
    fw = (ROOT / "firmware" / "lib" / "proto.py").read_text()
    srv = (ROOT / "server" / "xiaozhi_server" / "protocol" / "__init__.py").read_text()
    # ... except the server-only blocks, left out of the board's module
    assert "# ---- server only ----" in srv and "server only" not in fw
    assert _without_table(fw) == _without_table(generate.board_runtime(srv))
    assert _values(fw) == _values(generate.board_runtime(srv))
    # ... and the same schemas: the board's table file holds the server's
    # table, but for the schemas the board never checks (x-board: false)
    import json
    from xiaozhi_server import protocol
    lines = (ROOT / "firmware" / "assets" / "proto_schemas.txt").read_text().splitlines()
    table = dict(line.split("\t", 1) for line in lines)
    host_only = {k for k in protocol.SCHEMAS if k.startswith(("registry.", "sim."))} - {"registry.pending_task"}
    assert table == {k: v for k, v in protocol.SCHEMAS.items() if k not in host_only}
    assert all(json.loads(v) is not None for v in table.values())


def test_the_servers_generated_lines_stay_short():
    for name in ("__init__.py", "schemas.py"):
        text = (ROOT / "server" / "xiaozhi_server" / "protocol" / name).read_text(encoding="utf-8")
        longest = max(text.splitlines(), key=len)
        assert len(longest) <= 240, "%s: a generated line of %d characters" % (name, len(longest))


def test_host_only_schemas_stay_off_the_board_and_nothing_there_needs_them():
    m = generate.gather(generate.load_sources(), generate.json.load(open(generate.os.path.join(
        generate.HERE, "binary.json"))))
    assert "registry.apps" in m.host_only and "sim.event" in m.host_only
    assert "registry.pending_task" not in m.host_only      # the board checks its NVS record
    assert not [k for k in m.ws.values() if k in m.host_only]
    src = {"a.json": {"x-board": False, "type": "string"},
           "b.json": {"type": "object", "properties": {"x": {"$ref": "a.json"}}}}
    with pytest.raises(generate.SchemaError) as e:
        generate.gather(src, binary())
    assert "x-board" in str(e.value)


def binary():
    return {"frame_types": {"FRAME_OPUS": 0}, "layouts": {}, "max_payload": 10}


@pytest.mark.parametrize("schema,word", [
    ({"type": "object", "patternProperties": {"^a": {}}}, "patternProperties"),
    ({"type": "string", "pattern": "^[a-z]+$"}, "pattern"),
    ({"type": "object", "properties": {"n": {"type": "number", "multipleOf": 2}}}, "multipleOf"),
    ({"type": "string", "format": "email"}, "email"),
])
def test_unsupported_keywords_are_refused(schema, word):
    with pytest.raises(generate.SchemaError) as e:
        generate.gather({"x/y.json": schema}, binary())
    assert word in str(e.value)


def test_dangling_ref_is_refused():
    with pytest.raises(generate.SchemaError) as e:
        generate.gather({"x/y.json": {"$ref": "x/missing.json"}}, binary())
    assert "unknown schema x.missing" in str(e.value)


def test_builder_fills_constants_and_skips_absent_fields():
    m = generate.gather({"ws/ping.json": {
        "x-type": "ping", "x-builder": "ping", "type": "object", "required": ["type", "n"],
        "properties": {"type": {"const": "ping"}, "n": {"type": "integer"}, "note": {"type": "string"}}}},
        binary())
    ns = {}
    exec(generate.emit_builder(m, "ping", "ws.ping"), ns)
    assert ns["ping"](3) == {"type": "ping", "n": 3}
    assert ns["ping"](3, note="x") == {"type": "ping", "n": 3, "note": "x"}
