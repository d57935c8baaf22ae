"""The primary's side of the worker processes.

    pool = WorkerPool(config, count=2, device_tokens=True, with_mcp=True)
    await pool.start()     # port bound, every worker's models loaded, all accepting
    pool.port, pool.sessions()     # the WebSocket port; sessions per worker
    pool.view_of("dev1")           # that device's session in any worker, as the plane sees it
    await pool.stop()      # SIGTERM to each worker, SIGKILL after STOP_TIMEOUT_S

The primary binds the WebSocket port once and every worker inherits that
one listening socket (not SO_REUSEPORT): all workers accept from one queue,
so a new connection goes to whichever worker is free first instead of to a
hash of its address (uneven with few clients); connections queued when a
worker dies stay in the queue for the others; no other program can bind
the port alongside and take a share; and port 0 works (tests).

Each worker talks to the primary over its own socketpair, one JSON object
a line (channel.py, schemas shard.settings and shard.report in
shared/protocol): the primary sends the worker's settings; the worker
answers {"ready": pid, "llm": ...} once its models are loaded and it
accepts, then {"sessions": n} whenever its count changes, and {"claim":
...} when a device's hello opened a session there: the primary then tells
the worker holding that device's older session to release it ({"release":
...}), so a device has one session across workers as within one
(transport/device_sessions.py). The plane's tool calls (a board's lesson
list) go to the worker holding the device as {"call": ...} and come back as
{"answer": ...}; forgetting a device sends {"close": ...}. A line that does not fit is logged and
skipped: it never ends the channel. The socketpair is also the
worker's lifeline: when the primary is gone, however it ended, the worker
reads end-of-file and stops (and the kernel sends it SIGTERM, worker.py).

A worker that exits while the pool runs is logged and started again after
a delay that doubles from BACKOFF_MIN_S up to BACKOFF_MAX_S (the generated
reconnect schedule, protocol/backoff.py, jitter included), back to the
minimum once a worker has stayed up STABLE_S. The others go on serving
meanwhile.
"""
import asyncio
import logging
import os
import signal
import socket
import subprocess
import sys

from ..logthrottle import LogThrottle
from ..protocol.backoff import Backoff
from ..transport.guard import accept_burst
from . import channel

log = logging.getLogger(__name__)

BACKOFF_MIN_S = 0.5
BACKOFF_MAX_S = 30.0
STABLE_S = 60.0
STOP_TIMEOUT_S = 10.0
MAX_HOLDERS = 100000        # devices whose newest session the primary remembers


class WorkerFailed(Exception):
    pass


class RemoteView:
    """A session in a worker process, as the control plane sees it
    (session/view.py: the same members as a LocalView)."""

    def __init__(self, pool, wid, line):
        self._pool, self._wid = pool, wid
        self.device_id = line["device"]
        self.app, self.task = line.get("app"), line.get("task")
        self._tools = line["tools"]

    def has_tool(self, name):
        return name in self._tools

    async def call_tool(self, name, args, timeout):
        return await self._pool.call(self._wid, self.device_id, name, args, timeout)

    async def close(self, reason):
        self._pool.close_session(self._wid, self.device_id, reason)


def listen_sockets(host, port, backlog):
    """Listening sockets for host:port, as asyncio's create_server would bind
    them (every address the name resolves to), inheritable by the workers."""
    infos = socket.getaddrinfo(host or None, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    socks, seen = [], set()
    try:
        for family, kind, proto, _name, addr in infos:
            if (family, addr) in seen:
                continue
            seen.add((family, addr))
            s = socket.socket(family, kind, proto)
            socks.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(socks) > 1:   # every address on the port the first one got
                addr = (addr[0], socks[0].getsockname()[1]) + tuple(addr[2:])
            s.bind(addr)
            s.listen(backlog)
            s.set_inheritable(True)
    except OSError:
        for s in socks:
            s.close()
        raise
    return socks


class _Worker:
    def __init__(self, wid, proc, reader, writer):
        self.id = wid
        self.proc = proc
        self.reader = reader
        self.writer = writer
        self.sessions = 0
        self.drained = None        # a Future while the worker drains
        self.held = {}             # device_id -> its session's line of the worker's last "held" report
        self.started = asyncio.get_running_loop().time()


class WorkerPool:
    def __init__(self, config, count, device_tokens=False, with_mcp=True, services_factory=None,
                 log_level=None):
        """services_factory: "module:function" building a worker's Services from
        its config and the store's shared parts, as (config, **shared)
        (benchmarks: providers that stand in for real ones; assemble.py)."""
        self.config = config
        self.count = count
        self.device_tokens = device_tokens
        self.with_mcp = with_mcp
        self.services_factory = services_factory
        self.log_level = log_level if log_level is not None else logging.getLogger().getEffectiveLevel()
        self.port = config["server"]["ws_port"]
        self.llm = None
        self.restarts = 0
        self._socks = []
        self._workers = {}         # id -> _Worker
        self._keepers = []
        self._procs = set()
        self._stopping = False
        self.log_throttle = LogThrottle(log)
        self._holders = {}         # device_id -> (worker id, session id, claimed at) of its newest session
        self._calls = {}           # call id -> Future of its answer
        self._call_ids = 0

    def sessions(self):
        """Sessions per worker, in worker order (0 while one is restarting)."""
        return [self._workers[i].sessions if i in self._workers else 0 for i in range(1, self.count + 1)]

    def view_of(self, device_id):
        """The device's session in whichever worker holds it (the newest one
        when two briefly do), as the control plane sees it; None when none does."""
        holder = self._holders.get(device_id)
        found = [(w, w.held[device_id]) for w in self._workers.values() if device_id in w.held]
        if not found:
            return None
        w, line = next(((w, line) for w, line in found if holder and (w.id, line["session"]) == holder[:2]), found[0])
        return RemoteView(self, w.id, line)

    def held_devices(self):
        return {d for w in self._workers.values() for d in w.held}

    async def call(self, wid, device_id, tool, args, timeout):
        """A device tool run by the session in worker wid: (text, is_error)."""
        w = self._workers.get(wid)
        if w is None:
            return "the worker holding the device restarted", True
        self._call_ids += 1
        cid = self._call_ids
        answer = self._calls[cid] = asyncio.get_running_loop().create_future()
        try:
            channel.write(w.writer, "shard.command",
                          {"call": {"id": cid, "device": device_id, "tool": tool, "args": args, "timeout": timeout}})
            # The worker times the call out itself; the margin covers a worker that dies meanwhile.
            return await asyncio.wait_for(answer, timeout + 5)
        except (asyncio.TimeoutError, OSError, RuntimeError):
            return "the worker holding the device did not answer", True
        finally:
            self._calls.pop(cid, None)

    def close_session(self, wid, device_id, reason):
        w = self._workers.get(wid)
        if w is not None:
            channel.write(w.writer, "shard.command", {"close": {"device": device_id, "reason": reason[:200]}})

    def pids(self):
        return {i: w.proc.pid for i, w in self._workers.items()}

    async def start(self):
        limits = self.config["limits"]
        self._socks = listen_sockets(self.config["server"]["host"], self.port,
                                     accept_burst(int(limits["ws_max_pending"])))
        self.port = self._socks[0].getsockname()[1]
        spawning = [asyncio.ensure_future(self._spawn(wid)) for wid in range(1, self.count + 1)]
        try:
            self._workers = {w.id: w for w in await asyncio.gather(*spawning)}
        except BaseException:
            for t in spawning:
                t.cancel()
            await asyncio.gather(*spawning, return_exceptions=True)
            await self.stop()
            raise
        self._keepers = [asyncio.create_task(self._keep(w)) for w in self._workers.values()]
        log.info("%d workers accept WebSocket sessions on port %d", self.count, self.port)
        return self

    async def drain(self, timeout_s):
        """Stop accepting (this process's copy of the listening socket closes
        too, so a connect is refused rather than left in the queue), have
        every worker let its replies finish and close its sessions; returns
        when all said they are done, or after timeout_s and a margin. A
        worker that dies meanwhile is not started again."""
        self._stopping = True
        for s in self._socks:
            s.close()
        self._socks = []
        waiting = []
        for w in self._workers.values():
            w.drained = asyncio.get_running_loop().create_future()
            try:
                channel.write(w.writer, "shard.command", {"drain": timeout_s})
                waiting.append(w.drained)
            except (OSError, RuntimeError):
                pass
        if waiting:
            await asyncio.wait(waiting, timeout=timeout_s + 10)

    async def stop(self):
        self._stopping = True
        for t in self._keepers:
            t.cancel()
        await asyncio.gather(*[self._end(p) for p in list(self._procs)])
        for w in self._workers.values():
            w.writer.close()
        for s in self._socks:
            s.close()
        self._socks = []

    # ---- one worker ----

    def _settings(self, wid):
        return {"worker": wid, "workers": self.count, "config": self.config, "log_level": self.log_level,
                "device_tokens": self.device_tokens, "with_mcp": self.with_mcp,
                "services_factory": self.services_factory, "sys_path": sys.path}

    async def _spawn(self, wid):
        ours, theirs = socket.socketpair()
        fds = [theirs.fileno()] + [s.fileno() for s in self._socks]
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "xiaozhi_server.shard.worker", str(os.getpid()), *[str(fd) for fd in fds],
                pass_fds=fds, stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        self._procs.add(proc)
        reader, writer = await asyncio.open_unix_connection(sock=ours, limit=channel.LIMIT)
        w = _Worker(wid, proc, reader, writer)
        try:
            await channel.send(writer, "shard.settings", self._settings(wid))
            ready = await channel.read_one(reader, "shard.report") or {}
        except channel.BadLine as e:
            log.error("worker %d: its first line is not a report: %s", wid, e)
            ready = {}
        except OSError:
            ready = {}
        if "ready" not in ready:
            writer.close()
            code = await proc.wait()
            self._procs.discard(proc)
            if ready.get("error"):
                raise WorkerFailed("worker %d: %s" % (wid, ready["error"]))
            raise WorkerFailed("worker %d exited with code %s before it was ready (its log says why)" % (wid, code))
        self.llm = self.llm or ready.get("llm")
        log.info("worker %d ready (pid %d)", wid, proc.pid)
        return w

    async def _watch(self, w):
        """Follow a worker's reports until it is gone; its exit code."""
        async for msg in channel.lines(w.reader, "shard.report", self.log_throttle, "worker %d" % w.id):
            if "sessions" in msg:
                w.sessions = msg["sessions"]
            elif "held" in msg:
                w.held = {line["device"]: line for line in msg["held"]}
            elif "answer" in msg:
                answer = self._calls.get(msg["answer"]["id"])
                if answer is not None and not answer.done():
                    answer.set_result((msg["answer"]["text"], msg["answer"]["error"]))
            elif "claim" in msg:
                self._claimed(w.id, msg["claim"]["device"], msg["claim"]["session"], msg.get("at"))
            elif "drained" in msg and w.drained is not None and not w.drained.done():
                w.drained.set_result(True)
        w.writer.close()
        code = await w.proc.wait()
        self._procs.discard(w.proc)
        return code

    def _claimed(self, wid, device_id, session_id, at=None):
        """A worker opened a session for this device at `at` (its monotonic
        clock, one for every process of the host): of this session and the one
        the primary knew, the older is released. Each worker's lines come on
        its own socket, so a busy worker's claim can arrive after a newer one
        from another worker: arrival order alone would close the newer session."""
        before = self._holders.get(device_id)
        if before is not None and at is not None and before[2] is not None and at < before[2]:
            if before[0] != wid and wid in self._workers:   # a worker ends its own older session itself
                channel.write(self._workers[wid].writer, "shard.command",
                              {"release": {"device": device_id, "session": session_id}})
            return
        self._holders.pop(device_id, None)
        self._holders[device_id] = (wid, session_id, at)
        if len(self._holders) > MAX_HOLDERS:
            self._holders.pop(next(iter(self._holders)))
        if before is not None and before[0] != wid and before[0] in self._workers:
            channel.write(self._workers[before[0]].writer, "shard.command",
                          {"release": {"device": device_id, "session": before[1]}})

    async def _keep(self, w):
        loop = asyncio.get_running_loop()
        backoff = Backoff(int(BACKOFF_MIN_S * 1000), int(BACKOFF_MAX_S * 1000))
        while True:
            code = await self._watch(w)
            w.sessions = 0
            w.held = {}
            if self._stopping:
                return
            if loop.time() - w.started >= STABLE_S:
                backoff.reset()
            delay = backoff.next_ms() / 1000
            how = "was killed by signal %d" % -code if code < 0 else "exited with code %d" % code
            log.error("worker %d (pid %d) %s; starting it again in %.1f s", w.id, w.proc.pid, how, delay)
            while True:
                await asyncio.sleep(delay)
                if self._stopping:
                    return
                try:
                    w = self._workers[w.id] = await self._spawn(w.id)
                    self.restarts += 1
                    break
                except WorkerFailed as e:
                    delay = backoff.next_ms() / 1000
                    log.error("%s; trying again in %.1f s", e, delay)

    async def _end(self, proc):
        if proc.returncode is None:
            try:
                proc.send_signal(signal.SIGTERM)
                await asyncio.wait_for(proc.wait(), STOP_TIMEOUT_S)
            except ProcessLookupError:
                pass
            except asyncio.TimeoutError:
                log.warning("worker pid %d did not stop within %g s: killed", proc.pid, STOP_TIMEOUT_S)
                proc.kill()
                await proc.wait()
        self._procs.discard(proc)
