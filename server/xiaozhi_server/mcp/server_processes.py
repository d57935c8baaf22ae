"""The server's own MCP servers, each a stdio subprocess (mcp SDK client side).

    procs = ServerProcesses()            # reads data/mcp_servers.json
    await procs.start()                  # spawn, initialize, list tools
    procs.tools()                        # [{"name", "description", "inputSchema", "server"}]
    text, is_error = await procs.call("translate", {"text": "你好"})
    await procs.close()

Failures never raise out of start() or call(): a server that cannot start
is logged with its reason and left out; a timeout, a crash or an SDK error
in a call comes back as (readable message, True). A crashed process is
started again on the next call to one of its tools; repeated crashes wait
a growing delay (1 s doubling up to 30 s) before the next try, so a server
that dies at once does not spin.

Each process lives in its own owner task, which enters the SDK's stdio
client and session with an AsyncExitStack and exits them again itself:
anyio cancel scopes must be left in the task that entered them. Calls from
other tasks only send requests through the session.
"""
import asyncio
import contextlib
import json
import logging
import time
from typing import Mapping

import anyio
import mcp_types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from . import server_config
from .stderr_tail import StderrTail

log = logging.getLogger(__name__)

FIRST_RETRY_S = 1.0
MAX_RETRY_S = 30.0
CLOSE_TIMEOUT_S = 10.0   # the SDK's own shutdown is bounded by ~6 s


class _EndWatchingStream:
    """The transport's read stream, telling us when the child's stdout ends.

    The SDK session notices EOF only inside its own task group; this thin
    wrapper (the SDK's ReadStream protocol) lets the owner task see that the
    process is gone, so the next call restarts it instead of failing.
    """

    def __init__(self, stream, on_end):
        self._stream = stream
        self._on_end = on_end

    async def receive(self):
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self):
        await self._stream.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()
        return None


def _result_text(result):
    """The text content of a tools/call result, joined; other content summarised."""
    parts = []
    for item in result.content or []:
        if isinstance(item, mcp_types.TextContent):
            parts.append(item.text)
        else:
            parts.append("[%s content]" % getattr(item, "type", "other"))
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _leaves(exc):
    """The real errors inside anyio's exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _describe(exc):
    parts = []
    for leaf in _leaves(exc):
        if isinstance(leaf, MCPError):
            parts.append(leaf.message or "MCP error %d" % leaf.code)
        else:
            parts.append("%s: %s" % (type(leaf).__name__, leaf) if str(leaf) else type(leaf).__name__)
    return "; ".join(parts)


class ServerProcess:
    """One configured server: its process, session and tool list."""

    def __init__(self, spec):
        self.spec = spec
        self.name = spec.name
        self.tools = []            # mcp_types.Tool from the last successful start
        self.session = None        # a live ClientSession, or None
        self.last_error = None     # why the last start or the process failed
        self.generation = 0        # counts successful starts, so the tool table can follow
        self._owner = None
        self._stop = None
        self._ended = None
        self._lock = asyncio.Lock()
        self._failures = 0
        self._retry_at = 0.0

    @property
    def alive(self):
        return self.session is not None and not self._ended.is_set()

    # --- lifetime --------------------------------------------------
    async def start(self):
        """Spawn and initialize; True when ready. Never raises."""
        async with self._lock:
            return await self._start_locked()

    async def _start_locked(self):
        await self._reap()
        ready = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._ended = asyncio.Event()
        self._owner = asyncio.create_task(self._own(ready), name="mcp-server-%s" % self.name)
        ok = await ready
        if ok:
            self.generation += 1
            self.last_error = None
        else:
            await self._reap()
            self._count_failure()
        return ok

    def _count_failure(self):
        # The first failure may restart at once; each further one in a row
        # waits twice as long (up to MAX_RETRY_S). A good call resets it.
        self._failures += 1
        if self._failures > 1:
            delay = min(MAX_RETRY_S, FIRST_RETRY_S * 2 ** (self._failures - 2))
            self._retry_at = time.monotonic() + delay

    async def _own(self, ready):
        """Owner task: enter the transport and session, serve, exit them here."""
        stderr = StderrTail(self.name, log)
        params = StdioServerParameters(command=self.spec.command, args=self.spec.args,
                                       env=self.spec.env, cwd=self.spec.cwd)
        try:
            async with contextlib.AsyncExitStack() as stack:
                errlog = await stderr.open()
                try:
                    read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
                finally:
                    stderr.spawned()
                read = _EndWatchingStream(read, self._ended.set)
                session = await stack.enter_async_context(
                    ClientSession(read, write, client_info=mcp_types.Implementation(
                        name="xiaozhi-server", version="0.1.0")))
                with anyio.fail_after(self.spec.start_timeout_s):
                    await session.initialize()
                    tools = await self._list_tools(session)
                self.tools = tools
                self.session = session
                ready.set_result(True)
                log.info("MCP server %s ready: tools %s", self.name, ", ".join(t.name for t in tools))
                await self._wait_stop_or_end()
                if not self._stop.is_set():
                    self.last_error = "the process ended"
                    log.warning("MCP server %s stopped unexpectedly; it restarts on the next call",
                                self.name)
        except Exception as exc:  # one failing server must not take the others down
            reason = self._reason(exc, stderr)
            self.last_error = reason
            if not ready.done():
                log.error("MCP server %s could not start (%s): %s",
                          self.name, " ".join([self.spec.command] + self.spec.args), reason)
            else:
                log.warning("MCP server %s ended with an error: %s", self.name, reason)
        finally:
            self.session = None
            self._ended.set()
            if not ready.done():
                ready.set_result(False)
            await stderr.aclose()

    def _reason(self, exc, stderr):
        leaves = _leaves(exc)
        if any(isinstance(e, TimeoutError) for e in leaves):
            reason = "no answer to initialize within %g s" % self.spec.start_timeout_s
        elif any(isinstance(e, MCPError) and e.code == mcp_types.CONNECTION_CLOSED for e in leaves):
            reason = "the process ended before it answered"
        else:
            reason = _describe(exc)
        tail = stderr.last_lines()
        if tail:
            reason += " | stderr: " + " / ".join(tail[-3:])
        return reason

    async def _wait_stop_or_end(self):
        stop = asyncio.ensure_future(self._stop.wait())
        end = asyncio.ensure_future(self._ended.wait())
        try:
            await asyncio.wait((stop, end), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            end.cancel()
            await asyncio.gather(stop, end, return_exceptions=True)

    @staticmethod
    async def _list_tools(session):
        tools, cursor = [], None
        while True:
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def _reap(self):
        """Stop the owner task (if any) and wait for it to finish."""
        owner, self._owner = self._owner, None
        if owner is None:
            return
        self._stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(owner), CLOSE_TIMEOUT_S)
        except asyncio.TimeoutError:
            log.error("MCP server %s did not shut down in %g s", self.name, CLOSE_TIMEOUT_S)
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)

    async def close(self):
        async with self._lock:
            await self._reap()

    # --- calls -----------------------------------------------------
    async def _ensure_running(self):
        """A live session, restarting a dead process; or an error message."""
        async with self._lock:
            if self.alive:
                return self.session, None
            wait = self._retry_at - time.monotonic()
            if wait > 0:
                return None, ("the %s tool server is restarting after a failure (%s); try again in %d s"
                              % (self.name, self.last_error or "unknown", int(wait) + 1))
            log.info("starting MCP server %s again (%s)", self.name, self.last_error or "not running")
            if not await self._start_locked():
                return None, "the %s tool server could not be started: %s" % (self.name, self.last_error)
            return self.session, None

    async def call(self, tool, arguments, timeout=None):
        timeout = self.spec.call_timeout_s if timeout is None else timeout
        session, error = await self._ensure_running()
        if error:
            return error, True
        try:
            result = await session.call_tool(tool, arguments or {}, read_timeout_seconds=timeout)
        except MCPError as exc:
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                return "the %s tool did not answer within %g s" % (tool, timeout), True
            if exc.code == mcp_types.CONNECTION_CLOSED:
                self._note_crash()
                return ("the %s tool server stopped during the call; it restarts on the next call"
                        % self.name), True
            return "the %s tool failed: %s" % (tool, _describe(exc)), True
        except TimeoutError:
            return "the %s tool did not answer within %g s" % (tool, timeout), True
        except Exception as exc:  # a bad reply must not break the caller's turn
            log.warning("MCP call %s on %s failed", tool, self.name, exc_info=True)
            return "the %s tool failed: %s" % (tool, _describe(exc)), True
        self._failures = 0
        return _result_text(result), bool(result.is_error)

    def _note_crash(self):
        self.last_error = "the process ended during a call"
        self._ended.set()
        self._count_failure()


class ServerProcesses:
    """Every enabled server from mcp_servers.json, and one tool table over them."""

    def __init__(self, config_path: str | None = None, environ: Mapping[str, str] | None = None,
                 specs: list[server_config.ServerSpec] | None = None) -> None:
        if specs is None:
            specs = server_config.load(config_path, environ)
        self.servers = [ServerProcess(s) for s in specs if s.enabled]
        self._by_tool: dict[str, ServerProcess] = {}
        self._indexed: tuple[int, ...] = ()

    async def start(self) -> list[str]:
        """Start every server at once; the ones that fail are logged and skipped."""
        await asyncio.gather(*(s.start() for s in self.servers))
        self._index_tools()
        return [s.name for s in self.servers if s.alive]

    def _index_tools(self):
        table = {}
        for server in self.servers:
            for tool in server.tools:
                if tool.name in table:
                    log.warning("tool %s of MCP server %s hides the one of %s",
                                tool.name, table[tool.name].name, server.name)
                    continue
                table[tool.name] = server
        self._by_tool = table
        self._indexed = tuple(s.generation for s in self.servers)

    def tools(self) -> list[dict]:
        """Declarations of every tool, in the shape the tool table takes."""
        out = []
        for name, server in self._by_tool.items():
            tool = next(t for t in server.tools if t.name == name)
            out.append({"name": tool.name, "description": tool.description or "",
                        "inputSchema": tool.input_schema, "server": server.name})
        return out

    async def call(self, name: str, arguments: dict | None = None,
                   timeout: float | None = None) -> tuple[str, bool]:
        """(text, is_error) of one tool call; never raises for a failure."""
        server = self._by_tool.get(name)
        if server is None:
            return "unknown tool: %s" % name, True
        text, is_error = await server.call(name, arguments, timeout)
        if tuple(s.generation for s in self.servers) != self._indexed:
            # A restarted process listed its tools again; they may differ.
            self._index_tools()
        return text, is_error

    async def close(self) -> None:
        """End every process (stdin closed, then the SDK's bounded kill)."""
        await asyncio.gather(*(s.close() for s in self.servers))
        self._by_tool = {}
