"""The test tree's root. tests/ (for testkit) and tools/ (for simkit) are
on the import path through pyproject.toml's pytest `pythonpath`, so no test
folder adds another's path."""
import os

import pytest

from testkit import groups

# The fixtures every folder shares, defined once (testkit/fixtures.py).
pytest_plugins = ("testkit.fixtures",)

# The suite's chat model is the scripted one (or none): the offline model that
# `make run` prepares is not the default here, in this process or any server it
# starts. Its own tests ask for it by type (docs/testing.md, XIAOZHI_LLM_SMOKE).
os.environ["XIAOZHI_LOCAL_LLM"] = "off"


def pytest_configure(config):
    groups.configure(config)


def pytest_unconfigure(config):
    path = getattr(config, "_xiaozhi_groups_file", None)
    if path and os.path.exists(path):
        os.remove(path)


# Before xdist's own hook, which reads the xdist_group marks.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    groups.assign_and_share(config, items)


# xdist's hooks (optional: the suite also runs without xdist, one process).
@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput[groups.GROUPS_KEY] = groups.controller_file(node.config)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    return groups.make_scheduler(config, log)
