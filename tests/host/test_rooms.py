"""The server's rooms import one way. A room is a folder of
server/xiaozhi_server (session/, pipeline/, runtime/, ...) or one of its
top-level modules (services.py, server.py, ...). Every import counts: at
module level, inside functions, and under `if TYPE_CHECKING` (a type-only
arrow still ties two rooms for a reader and for a move). The test reads the
source (ast), imports nothing, and names the files behind each arrow of a
circle it finds."""
import ast
import collections

from testkit import ROOT

PACKAGE = ROOT / "server" / "xiaozhi_server"
NAME = "xiaozhi_server"


def _module_of(path, package=PACKAGE):
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return parts


def _imports(path, package_dir=PACKAGE):
    """Every module of the package this file imports, as a list of name parts."""
    here = _module_of(path, package_dir)
    package = here if path.name == "__init__.py" else here[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == NAME:
                    yield parts
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
            else:
                base = []
            mod = base + (node.module.split(".") if node.module else [])
            if not mod or mod[0] != NAME:
                continue
            if node.module:
                yield mod
            # `from . import x` names modules (or names) of the package itself
            for alias in node.names:
                yield mod + [alias.name]


def _room(parts):
    """xiaozhi_server.session.session -> session; a name that is not a module
    of a folder (from .. import protocol as proto) is its folder's room."""
    if len(parts) < 2:
        return None
    return parts[1].removesuffix(".py")


def room_arrows():
    """{(room, room): [(file, imported module), ...]} between different rooms."""
    arrows = collections.defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        src = _room(_module_of(path))
        if src is None:
            continue
        for mod in _imports(path):
            dst = _room(mod)
            if dst is not None and dst != src:
                arrows[(src, dst)].append((str(path.relative_to(PACKAGE)), ".".join(mod)))
    return arrows


def circles(arrows):
    """Strongly connected groups of rooms (Tarjan), each larger than one room."""
    graph = collections.defaultdict(set)
    for a, b in arrows:
        graph[a].add(b)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(list(graph)):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_between_the_servers_rooms():
    arrows = room_arrows()
    found = circles(arrows)
    report = []
    for group in found:
        report.append("circle: " + " <-> ".join(group))
        for (a, b), why in sorted(arrows.items()):
            if a in group and b in group:
                report.append("  %s -> %s: %s" % (a, b, "; ".join("%s imports %s" % w for w in why[:4])))
    assert not found, "\n".join(report)


def test_the_walk_sees_type_only_and_function_level_imports(tmp_path):
    """The walk itself: an import under TYPE_CHECKING or inside a function is an arrow."""
    probe = tmp_path / NAME / "room_a" / "m.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..room_b.x import y\n"
                     "def f():\n    from .. import room_c\n    import os\n", encoding="utf-8")
    rooms = {_room(m) for m in _imports(probe, tmp_path / NAME)}
    assert rooms == {"room_b", "room_c"}
    assert circles({("a", "b"): [], ("b", "c"): [], ("c", "a"): [], ("c", "d"): []}) == [["a", "b", "c"]]


def test_session_keeps_the_connection_only():
    """No stage of the voice pipeline lives in session/: it is the connection
    and the dispatch of its messages (docs/server.md), with its first
    exchange (hello.py), the device's own requests (requests.py), the
    answers to the messages it refuses (refusal.py), who may speak now
    (floor.py), the child's words on to the runtime (hearing.py), and what
    the control plane may see and do of it, in whichever process (view.py)."""
    files = sorted(p.name for p in (PACKAGE / "session").glob("*.py"))
    assert files == ["__init__.py", "floor.py", "hearing.py", "hello.py", "refusal.py", "requests.py",
                     "session.py", "view.py"], files


def test_the_session_stays_a_module_read_in_one_sitting():
    """Session is the wire; the turn (floor.py, hearing.py, pipeline/reply.py)
    lives outside it. It grew from 455 to 696 lines when the turn lived inside."""
    lines = (PACKAGE / "session" / "session.py").read_text(encoding="utf-8").count("\n")
    assert lines < 300, "session/session.py has %d lines: move what is not the wire out" % lines


def test_provider_kinds_stand_apart():
    """providers/ has a folder per kind (asr/, tts/, llm/, vad/), each with
    its shared base beside its providers. A kind imports its own folder and
    what all kinds share at providers/'s top (registry, the Protocols, audio
    helpers, the Volcengine framing), never another kind: a voice that needs
    something of a recognizer means that thing belongs at the top."""
    providers = PACKAGE / "providers"
    kinds = sorted(p.name for p in providers.iterdir() if (p / "__init__.py").exists())
    assert kinds == ["asr", "llm", "tts", "vad"], kinds
    crossing = []
    for kind in kinds:
        for path in sorted((providers / kind).rglob("*.py")):
            for mod in _imports(path):
                if mod[:2] == [NAME, "providers"] and len(mod) > 2 and mod[2] in kinds and mod[2] != kind:
                    crossing.append("%s imports %s" % (path.relative_to(PACKAGE), ".".join(mod)))
    assert not crossing, "\n".join(crossing)


# The back office, one room per job. Each may import only the rooms named
# here (and what all rooms share: errors.py, protocol/, logthrottle.py...):
# the parents' API stands on the request plane, which stands on the store;
# the fleet (nodes, wake arbitration) stands on the store beside the plane;
# the MQTT broker and the server's link to it stand apart. None of them
# imports the composition that builds them (wiring.py, assemble.py, ...).
BACK_OFFICE = {
    "api": {"control", "store", "broker"},
    "control": {"store"},
    "fleet": {"store"},
    "store": set(),
    "broker": set(),
}
COMPOSITION = {"wiring", "assemble", "server", "cli", "__main__", "shard"}
MAX_ROOM_FILES = 20


def test_the_back_office_imports_down_only():
    """api -> control -> store, fleet -> store, broker apart; an arrow
    against these (the store reaching for the plane, the broker for the
    store, a room for the wiring above it) is named with its file."""
    rooms = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert set(BACK_OFFICE) <= set(rooms), "missing back-office rooms: %s" % sorted(set(BACK_OFFICE) - set(rooms))
    wrong = []
    for (a, b), why in sorted(room_arrows().items()):
        if a in BACK_OFFICE and (b in BACK_OFFICE or b in COMPOSITION) and b not in BACK_OFFICE[a]:
            wrong.append("%s -> %s: %s" % (a, b, "; ".join("%s imports %s" % w for w in why[:4])))
    assert not wrong, "\n".join(wrong)


def test_no_room_holds_more_than_twenty_files():
    """A room a newcomer reads in one sitting: at most 20 modules in one folder."""
    big = {}
    for folder in [PACKAGE] + sorted(p for p in PACKAGE.rglob("*") if p.is_dir() and (p / "__init__.py").exists()):
        n = len(list(folder.glob("*.py")))
        if folder != PACKAGE and n > MAX_ROOM_FILES:
            big[str(folder.relative_to(PACKAGE))] = n
    assert not big, big


def _file_of(parts):
    """The module file an imported name lives in (the longest prefix that is one)."""
    for n in range(len(parts), 1, -1):
        base = PACKAGE.parent.joinpath(*parts[:n])
        if base.with_suffix(".py").exists():
            return base.with_suffix(".py")
        if (base / "__init__.py").exists():
            return base / "__init__.py"
    return None


def test_no_import_circle_between_the_servers_modules():
    """Inside a room too, modules import one way: a module the store
    composes (deliveries.py) takes nothing back from store.py, and what the
    runtime's parts need of the runtime is a port (runtime/port.py), not
    runtime.py itself."""
    arrows = collections.defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for mod in _imports(path):
            dst = _file_of(mod)
            if dst is not None and dst != path and dst.name != "__init__.py":
                src, dst = str(path.relative_to(PACKAGE)), str(dst.relative_to(PACKAGE))
                arrows[(src, dst)].append((src, ".".join(mod)))
    found = circles(arrows)
    assert not found, "\n".join("circle: " + " <-> ".join(group) for group in found)
