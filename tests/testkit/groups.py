"""Which tests share a pytest-xdist worker, and in what order they start.

`make test` runs the suite on several workers (`--dist loadgroup`): a worker
is handed whole groups, one after another. The rules, first match wins
(docs/testing.md says how to place a new test):

- an explicit `@pytest.mark.xdist_group("name")` keeps its name;
- `cpu`: tests that keep a core busy for long (the type check, the firmware
  suites on MicroPython, fuzzing, the bench smoke run, C builds) run one
  after another on one worker, so they never fight each other for the two
  cores while the other workers wait on sockets;
- `netns`: tests that build network namespaces (fixed addresses and names);
- `browser`: tests that drive headless Chromium (one browser at a time: a
  start costs seconds of CPU);
- `build-firmware`: tests that write build/firmware (one shared directory);
- anything else: its own module, so a module-scoped server or fixture
  starts once, not once per worker.

Groups named in FIRST go to the workers before the rest: the long `cpu`
group must start at once, or it ends alone after everything else.

Why a scheduler of our own: xdist 3.8's `loadgroup` tags each test's node id
with its group, and pytest 9 no longer lets a plugin change a node id, so
the tags silently vanish and grouped tests spread over every worker. Here
each worker writes the {node id: group} map it collected to a file the
controller named (GROUPS_KEY), and the controller's scheduler reads it.
"""
import inspect
import json
import os
import tempfile

import pytest

# Markers a test (or a module, with pytestmark) may carry to say what it is.
MARKERS = {
    "cpu": "keeps a core busy for long: runs in the one `cpu` group",
    "netns": "builds network namespaces: runs in the `netns` group",
    "browser": "drives headless Chromium: runs in the `browser` group",
    "slow": "takes seconds or more: left out by `make test-fast`",
}

# Paths (from the repository root) whose tests belong to a group without
# saying so themselves; a folder ends with "/".
PATHS = {
    "cpu": (
        "tests/host/test_types.py",
        "tests/host/test_firmware_suite.py",
        "tests/host/test_bench_smoke.py",
        "tests/host/cmodule/",
        "tests/host/transport/test_protocol_fuzz.py",
    ),
    "netns": ("tests/host/netns/",),
    "browser": ("tests/host/console/",),
    "build-firmware": (
        "tests/host/tools/test_firmware_image.py",
        "tests/host/tools/test_flash.py",
    ),
}

# Modules whose tests take several seconds each even alone (a whole
# simulated board, worker processes, a restart, a long conversation):
# marked slow like the groups above, so `make test-fast` leaves them out.
# Measured with --durations (`.ci/run` prints the 30 slowest).
SLOW_PATHS = (
    "tests/host/sim/",
    "tests/host/transport/test_workers.py",
    "tests/host/transport/test_flood.py",
    "tests/host/control/test_control_conversation.py",
    "tests/host/clients/test_browser_abort.py",
    "tests/host/e2e/test_family_safety.py",
    "tests/host/e2e/test_turn_taking.py",
    "tests/host/runtime/test_seed_wake.py",
)

# Fixtures whose use puts a test in a group wherever it lives.
FIXTURES = {
    "browser": ("browser",),
}

# Test kit modules whose use puts a test module in a group: a new test that
# builds hosts with the fleet rig, or drives the console's browser, lands
# there without a mark.
MODULES = {
    "netns": ("testkit.netns", "testkit.fleet_rig"),
    "browser": ("testkit.console_browser",),
}

FIRST = ("cpu", "netns", "browser")


def _under(path, paths):
    """Whether a test file is one of `paths` or inside one of its folders (those ending with /)."""
    return any(path == p or (p.endswith("/") and path.startswith(p)) for p in paths)


def _uses(module, names):
    """Whether a test module imported one of the named modules, or something from one."""
    for value in vars(module).values():
        where = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
        if isinstance(where, str) and where in names:
            return True
    return False


def configure(config):
    for name, doc in MARKERS.items():
        config.addinivalue_line("markers", "%s: %s" % (name, doc))


def group_of(item):
    """The group name of one collected test."""
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return mark.args[0] if mark.args else mark.kwargs.get("name", "default")
    path = item.nodeid.split("::", 1)[0]
    for name in ("cpu", "netns", "browser"):
        if item.get_closest_marker(name) is not None:
            return name
    for name, paths in PATHS.items():
        if _under(path, paths):
            return name
    fixtures = set(getattr(item, "fixturenames", ()))
    for name, names in FIXTURES.items():
        if fixtures.intersection(names):
            return name
    module = getattr(item, "module", None)
    for name, names in MODULES.items():
        if module is not None and _uses(module, names):
            return name
    return path


def assign(items):
    """Mark every test with its group and put the FIRST groups in front
    (a stable sort: each group keeps its collection order)."""
    for item in items:
        name = group_of(item)
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(name))
        if name in ("cpu", "netns", "browser") and item.get_closest_marker(name) is None:
            item.add_marker(getattr(pytest.mark, name))
        # What keeps a core busy, builds hosts or starts a browser is slow by nature.
        slow = name in ("cpu", "netns", "browser") or _under(item.nodeid.split("::", 1)[0], SLOW_PATHS)
        if slow and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(group_of(item), len(FIRST)))


GROUPS_KEY = "xiaozhi_groups_file"


def assign_and_share(config, items):
    """assign(), then (on an xdist worker) write each test's group where the controller reads it."""
    assign(items)
    path = getattr(config, "workerinput", {}).get(GROUPS_KEY)
    if not path:
        return
    table = {item.nodeid: group_of(item) for item in items}
    tmp = "%s.%s" % (path, config.workerinput["workerid"])
    with open(tmp, "w") as f:
        json.dump(table, f)
    # Every worker collects the same tests: whichever replaces last, the map is whole.
    os.replace(tmp, path)


def controller_file(config):
    """The controller's file for the workers' maps, made once (None when not distributing)."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return None
    if not hasattr(config, "_xiaozhi_groups_file"):
        fd, path = tempfile.mkstemp(prefix="xiaozhi-test-groups-", suffix=".json")
        os.close(fd)
        config._xiaozhi_groups_file = path
    return config._xiaozhi_groups_file


def make_scheduler(config, log):
    """The `--dist loadgroup` scheduler: xdist's by-scope one, a scope being our group."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    path = controller_file(config)

    class GroupScheduling(LoadScopeScheduling):
        table = None

        def __init__(self, config, log=None):
            super().__init__(config, log)
            # Keep collection order (FIRST groups in front), not xdist's biggest-first.
            config.option.loadscopereorder = False

        def _split_scope(self, nodeid):
            if self.table is None:
                with open(path) as f:
                    self.table = json.load(f)
            bare = nodeid.split("@", 1)[0] if "@" in nodeid.rsplit("]", 1)[-1] else nodeid
            return self.table.get(bare) or bare.split("::", 1)[0]

    return GroupScheduling(config, log)
