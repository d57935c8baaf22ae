"""Figures for the server-side MCP processes: start, call overhead, translate, close.

    .venv/bin/python bench/mcp_bench.py        (or: make bench-mcp)

Prints figures only; nothing here is asserted. The model is the scripted
local OpenAI-compatible server, so the translate figure is the manager +
MCP + HTTP path without any model time.
"""
import asyncio
import pathlib
import tempfile
import textwrap
import time

from testkit.fake_llm import FakeLLM
from xiaozhi_server.mcp import server_config
from xiaozhi_server.mcp.server_processes import ServerProcesses

CALLS = 200
ECHO_SERVER = textwrap.dedent('''
    from mcp.server.mcpserver import MCPServer
    server = MCPServer(name="echo", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        return text

    server.run("stdio")
''')


def _pct(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1e3


async def _timed_calls(procs, name, arguments, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        _, is_error = await procs.call(name, arguments)
        times.append(time.perf_counter() - t0)
        if is_error:
            raise SystemExit("%s failed during the benchmark" % name)
    return times


async def main():
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as llm:
        llm.default_reply = "Hello."
        echo = pathlib.Path(tmp) / "echo_server.py"
        echo.write_text(ECHO_SERVER)
        environ = dict(llm.env())
        specs = [s for s in server_config.load(environ=environ) if s.name == "translate"]
        specs += server_config.parse({"servers": {"echo": {"command": "python", "args": [str(echo)]}}}, {})
        procs = ServerProcesses(specs=specs)
        t0 = time.perf_counter()
        started = await procs.start()
        print("start (translate + echo, in parallel): %.2f s, started %s"
              % (time.perf_counter() - t0, ", ".join(sorted(started))))
        times = await _timed_calls(procs, "echo", {"text": "你好"}, CALLS)
        print("MCP call round trip (echo), %d calls: p50 %.2f ms, p95 %.2f ms"
              % (CALLS, _pct(times, 0.5), _pct(times, 0.95)))
        first = await _timed_calls(procs, "translate", {"text": "你好"}, 1)
        times = await _timed_calls(procs, "translate", {"text": "你好"}, 50)
        print("translate via local fake model: first %.1f ms, then p50 %.1f ms, p95 %.1f ms"
              % (first[0] * 1e3, _pct(times, 0.5), _pct(times, 0.95)))
        t0 = time.perf_counter()
        await procs.close()
        print("close: %.2f s" % (time.perf_counter() - t0))


if __name__ == "__main__":
    asyncio.run(main())
