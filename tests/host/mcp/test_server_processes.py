"""The MCP process manager with real stdio subprocesses on the mcp SDK.

One manager runs, for the whole module, the shipped translate server, a
small test server (`toolbox`: echo, pid, slow, crash) and three servers that
cannot start. Tests check what a caller sees: the tool table, results and
errors as (text, is_error), restarts after a crash, and no process left
behind after close().
"""
import asyncio
import gc
import json
import logging
import os
import signal
import sys
import textwrap
import time

import pytest
import pytest_asyncio

from testkit import child_procs
from testkit.fake_llm import FakeLLM
from xiaozhi_server.mcp import server_config
from xiaozhi_server.mcp.server_processes import ServerProcesses

on_module_loop = pytest.mark.asyncio(loop_scope="module")
TRANSLATE_MODULE = "xiaozhi_server.mcp_servers.translate.server"

TOOLBOX = textwrap.dedent('''
    import asyncio, os
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="toolbox", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    def pid() -> str:
        return str(os.getpid())

    @server.tool()
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "done"

    @server.tool()
    def crash() -> str:
        os._exit(1)

    server.run("stdio")
''')


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)

    def about(self, word):
        return [r.getMessage() for r in self.records if word in r.getMessage()]


def _config(tmp, toolbox_path):
    return {"servers": {
        "translate": {"command": "python", "args": ["-m", TRANSLATE_MODULE],
                      "env": {"OPENAI_BASE_URL": "${TEST_LLM_URL}"}, "call_timeout_s": 20},
        "toolbox": {"command": "python", "args": [str(toolbox_path)], "call_timeout_s": 5},
        "missing": {"command": str(tmp / "no-such-server"), "args": []},
        "dies": {"command": "python",
                 "args": ["-c", "import sys; sys.stderr.write('fatal: no token configured\\n'); sys.exit(3)"]},
        "hangs": {"command": "python", "args": ["-c", "import time; time.sleep(60)"],
                  "start_timeout_s": 0.5},
        "off": {"command": str(tmp / "never-run"), "enabled": False},
    }}


@pytest.fixture(scope="module")
def llm():
    with FakeLLM() as fake:
        yield fake


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mcp")
    toolbox = tmp / "toolbox.py"
    toolbox.write_text(TOOLBOX)
    path = tmp / "mcp_servers.json"
    path.write_text(json.dumps(_config(tmp, toolbox)))
    return path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def started(llm, config_file):
    records = _Records()
    log = logging.getLogger("xiaozhi_server.mcp")
    log.addHandler(records)
    old_level = log.level
    log.setLevel(logging.DEBUG)
    environ = {"TEST_LLM_URL": llm.base_url, "OPENAI_API_KEY": "test-key", "OPENAI_MODEL": llm.model}
    manager = ServerProcesses(config_path=config_file, environ=environ)
    t0 = time.monotonic()
    names = await manager.start()
    print("start of 5 servers (2 good, 3 failing): %.2f s" % (time.monotonic() - t0))
    try:
        yield manager, names, records
    finally:
        await manager.close()
        log.removeHandler(records)
        log.setLevel(old_level)


@pytest.fixture
def procs(started):
    return started[0]


def _server(procs, name):
    return next(s for s in procs.servers if s.name == name)


async def _until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return predicate()


# --- start-up ------------------------------------------------------

@on_module_loop
async def test_servers_that_cannot_start_are_skipped_with_their_reason(started):
    procs, names, records = started
    assert sorted(names) == ["toolbox", "translate"]
    (missing,) = [m for m in records.about("could not start") if "missing" in m]
    assert "No such file" in missing
    (dies,) = [m for m in records.about("could not start") if "dies" in m]
    assert "fatal: no token configured" in dies
    (hangs,) = [m for m in records.about("could not start") if "hangs" in m]
    assert "no answer to initialize within 0.5 s" in hangs
    # A disabled server is not even tried.
    assert "off" not in [s.name for s in procs.servers]
    assert not records.about("never-run")


@on_module_loop
async def test_tool_table_holds_every_started_servers_tools(procs):
    table = {t["name"]: t for t in procs.tools()}
    assert set(table) == {"translate", "echo", "pid", "slow", "crash"}
    assert table["translate"]["server"] == "translate"
    assert table["echo"]["server"] == "toolbox"
    assert table["echo"]["inputSchema"]["properties"]["text"]["type"] == "string"
    assert table["slow"]["inputSchema"]["required"] == ["seconds"]


@on_module_loop
async def test_translate_works_beside_the_failed_servers(procs, llm):
    before = llm.request_count
    llm.reply("Thank you!")
    assert await procs.call("translate", {"text": "谢谢！"}) == ("Thank you!", False)
    # ${TEST_LLM_URL} in the file's env reached the child.
    assert llm.request_count == before + 1


# --- calls and their failures ----------------------------------------

@on_module_loop
async def test_text_result_comes_back_whole(procs):
    assert await procs.call("echo", {"text": "第一行\nsecond line"}) == ("第一行\nsecond line", False)


@on_module_loop
async def test_concurrent_calls_each_get_their_own_answer(procs):
    slow = asyncio.ensure_future(procs.call("slow", {"seconds": 0.5}))
    words = ["one", "二", "three", "四", "five"]
    answers = await asyncio.gather(*(procs.call("echo", {"text": w}) for w in words))
    assert answers == [(w, False) for w in words]
    # The echoes did not wait behind the slow call.
    assert not slow.done()
    assert await slow == ("done", False)


@on_module_loop
async def test_unknown_tool_and_bad_arguments_are_error_results(procs):
    text, is_error = await procs.call("self.camera.take_photo", {})
    assert is_error and "unknown tool" in text
    text, is_error = await procs.call("echo", {"wrong": 1})
    assert is_error and "text" in text


@on_module_loop
async def test_a_call_that_takes_too_long_times_out_as_an_error(procs):
    t0 = time.monotonic()
    text, is_error = await procs.call("slow", {"seconds": 30}, timeout=0.3)
    elapsed = time.monotonic() - t0
    assert is_error and "did not answer within 0.3 s" in text
    assert elapsed < 3
    # The server is still serving.
    assert await procs.call("echo", {"text": "still here"}) == ("still here", False)


@on_module_loop
async def test_a_crash_during_a_call_is_an_error_then_the_next_call_restarts(procs):
    old_pid, _ = await procs.call("pid")
    text, is_error = await procs.call("crash")
    assert is_error and "stopped during the call" in text
    assert child_procs.wait_gone(int(old_pid))
    new_pid, is_error = await procs.call("pid")
    assert not is_error and new_pid != old_pid
    assert await procs.call("echo", {"text": "back"}) == ("back", False)


@on_module_loop
async def test_a_server_that_keeps_crashing_backs_off(procs):
    await procs.call("crash")
    await procs.call("crash")           # restarted at once, crashes again
    text, is_error = await procs.call("echo", {"text": "x"})
    assert is_error and "restarting after a failure" in text and "try again in" in text
    # Refused while the back-off lasts (1 s at first), then served again:
    # ask until it is over rather than sleeping past it.
    deadline = time.monotonic() + 30
    while (answer := await procs.call("echo", {"text": "x"})) != ("x", False):
        assert answer[1] and "try again in" in answer[0], answer
        assert time.monotonic() < deadline, "still refused 30 s after the crash"
        await asyncio.sleep(0.05)


@on_module_loop
async def test_a_server_killed_between_calls_restarts_on_the_next_call(procs, llm):
    (pid,) = child_procs.children(match=TRANSLATE_MODULE)
    os.kill(pid, signal.SIGKILL)
    server = _server(procs, "translate")
    # The manager notices on its own that the process went away...
    assert await _until(lambda: not server.alive)
    assert child_procs.wait_gone(pid)
    # ...and the next call starts a new one and gets its answer.
    llm.reply("Good night.")
    assert await procs.call("translate", {"text": "晚安。"}) == ("Good night.", False)
    (new_pid,) = child_procs.children(match=TRANSLATE_MODULE)
    assert new_pid != pid


# --- shutdown ------------------------------------------------------

@on_module_loop
async def test_close_leaves_no_child_process_and_no_pending_task(llm, config_file, caplog):
    before = set(child_procs.children())
    tasks_before = asyncio.all_tasks()
    config = json.loads(config_file.read_text())
    for name in ("missing", "dies", "hangs"):
        del config["servers"][name]
    specs = server_config.parse(config, {"TEST_LLM_URL": llm.base_url, "OPENAI_API_KEY": "k"})
    manager = ServerProcesses(specs=specs)
    assert sorted(await manager.start()) == ["toolbox", "translate"]
    spawned = set(child_procs.children()) - before
    assert len(spawned) == 2
    # One call still in flight when close() comes.
    pending = asyncio.ensure_future(manager.call("slow", {"seconds": 30}))
    await asyncio.sleep(0.1)
    t0 = time.monotonic()
    await manager.close()
    print("close of 2 servers, one busy: %.2f s" % (time.monotonic() - t0))
    text, is_error = await asyncio.wait_for(pending, 5)
    assert is_error
    # Neither alive nor a zombie: the children are gone from the process table.
    assert not spawned & set(child_procs.children())
    left = asyncio.all_tasks() - tasks_before - {pending}
    assert [t.get_name() for t in left] == []
    gc.collect()
    assert "Task was destroyed" not in caplog.text


# --- mcp_servers.json ----------------------------------------------

def test_config_python_means_this_interpreter_and_env_is_filled():
    environ = {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_API_KEY": "k", "HOME_DIR": "/srv",
               "SECRET": "not passed"}
    (spec,) = server_config.parse({"servers": {"t": {
        "command": "python", "args": ["${HOME_DIR}/x.py"],
        "env": {"OPENAI_API_KEY": "${OTHER_KEY}", "MODE": "${HOME_DIR}/m", "EMPTY": "${UNSET}"}}}}, environ)
    assert spec.command == sys.executable
    assert spec.args == ["/srv/x.py"]
    # OPENAI_* pass through; a value that expands to nothing is left unset.
    assert spec.env == {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "MODE": "/srv/m"}
    assert spec.enabled and spec.call_timeout_s == 20


def test_shipped_config_registers_translate():
    (spec,) = [s for s in server_config.load(environ={}) if s.name == "translate"]
    assert spec.enabled and spec.command == sys.executable
    assert spec.args == ["-m", TRANSLATE_MODULE]


@pytest.mark.parametrize("entry, field", [
    ({"args": []}, "servers.x.command"),
    ({"command": "python", "args": "-m x"}, "servers.x.args"),
    ({"command": "python", "enabled": "yes"}, "servers.x.enabled"),
    ({"command": "python", "call_timeout_s": True}, "servers.x.call_timeout_s"),
    ({"command": "python", "env": {"A": 1}}, "servers.x.env"),
])
def test_config_errors_name_the_field(entry, field):
    with pytest.raises(server_config.ConfigError, match=field.replace(".", r"\.")):
        server_config.parse({"servers": {"x": entry}}, {})


def test_missing_config_file_means_no_servers(tmp_path):
    assert server_config.load(tmp_path / "absent.json", {}) == []
    assert ServerProcesses(config_path=tmp_path / "absent.json", environ={}).tools() == []
