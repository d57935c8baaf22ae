"""One worker process: voice sessions on the WebSocket socket it inherited.

    python -m xiaozhi_server.shard.worker PRIMARY_PID CHANNEL_FD LISTEN_FD [LISTEN_FD ...]

Started by the primary (pool.py), never by hand. It reads its settings from
the channel, builds its own providers and loads their models, starts the
server's MCP processes, and only then serves the inherited socket and says
ready: no session waits behind a model load. Its share of the WebSocket
caps is 1/N of each (the caps of docs/security.md hold for the whole
server). A device's own token is checked against the server secret the
primary made, read from the same file.

It stops on SIGTERM (the primary's stop) and when the channel ends (the
primary is gone); Ctrl-C reaches every process of the terminal, so SIGINT
is left to the primary, which stops the workers itself.
"""
import asyncio
import ctypes
import importlib
import logging
import os
import signal
import socket
import sys
import time

from ..config import ConfigError
from ..logthrottle import LogThrottle
from .drain import drain_sessions
from ..session.view import describe
from ..providers.registry import ProviderError
from ..runtime.registry import RegistryError
from . import channel

PR_SET_PDEATHSIG = 1
# Errors that name a setting: said in one line, without a traceback.
SETTING_ERRORS = (ConfigError, ProviderError, RegistryError, ValueError)
REPORT_EVERY_S = 0.2

log = logging.getLogger("xiaozhi_server.shard.worker")   # not __main__ under -m


def _die_with_parent(primary):
    """Linux: SIGTERM when the primary ends, even by SIGKILL (the channel's
    end-of-file covers it too, unless this process is stuck). False when
    the primary is gone already."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    return os.getppid() == primary


def share_of_caps(limits, workers):
    """This worker's part of the WebSocket connection caps."""
    for key in ("ws_max_connections", "ws_max_pending"):
        limits[key] = max(8, int(limits[key]) // workers)


def _services_factory(settings):
    """The services_factory ("module:function", called as (config, **shared)), or None: Services."""
    factory = settings.get("services_factory")
    if not factory:
        return None
    for p in settings.get("sys_path") or []:
        if p not in sys.path:
            sys.path.append(p)
    module, _, name = factory.partition(":")
    return getattr(importlib.import_module(module), name)


async def _build(settings, config, listen_fds):
    """Providers with their models loaded, server MCP processes, and the
    WebSocket endpoint serving the inherited sockets."""
    from ..assemble import WORKER, assemble, worker_store
    from ..logthrottle import throttle_server_logs
    from ..mcp.server_tools import start_server_tools
    from ..transport.guard import fit_to_fd_limit
    fit_to_fd_limit(config["limits"], ports=("ws",))
    throttle_server_logs(float(config["limits"]["log_interval_s"]))
    # The family's limits and usage, the care records (blocked topics,
    # transcripts, memory) and the devices' conversations live in the
    # control store the primary migrated: this worker's own connection.
    store = await worker_store(config) if settings["device_tokens"] else None
    parts = assemble(config, WORKER, device_tokens=settings["device_tokens"], store=store,
                     make_services=_services_factory(settings))
    services, ws = parts.services, parts.ws
    await services.start()     # every model loaded before the first session can ask for one
    mcp = await start_server_tools(config, services) if settings["with_mcp"] else None
    await ws.start(sockets=[socket.socket(fileno=fd) for fd in listen_fds])
    return services, mcp, ws, store


async def serve(channel_fd, listen_fds):
    loop = asyncio.get_running_loop()
    reader, writer = await asyncio.open_unix_connection(sock=socket.socket(fileno=channel_fd), limit=channel.LIMIT)
    try:
        settings = await channel.read_one(reader, "shard.settings")
    except channel.BadLine as e:
        print("worker: the primary's settings line is not usable: %s" % e, file=sys.stderr)
        return 1
    if settings is None:
        return 1
    wid = settings["worker"]
    logging.basicConfig(level=settings["log_level"],
                        format="%%(asctime)s %%(levelname).1s w%d %%(name)s: %%(message)s" % wid)
    config = settings["config"]
    share_of_caps(config["limits"], settings["workers"])

    try:
        services, mcp, ws, store = await _build(settings, config, listen_fds)
    except Exception as e:
        # The primary builds no providers: a bad provider setting shows up
        # here first, and the primary says why it could not start.
        if not isinstance(e, SETTING_ERRORS):
            log.exception("worker %d could not start", wid)
        await channel.send(writer, "shard.report", {"error": (str(e) or type(e).__name__)[:4000]})
        return 2

    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)

    def claimed(device_id, session_id):
        # When: the primary orders claims of two workers by it (shard/pool.py).
        channel.write(writer, "shard.report", {"claim": {"device": device_id[:256], "session": session_id},
                                               "at": time.monotonic()})
    ws.device_sessions.on_claim = claimed

    def session_of(device_id):
        return next((s for s in services.sessions if s.device_id == device_id and not s.closed), None)

    async def call(ask):
        """One device tool for the primary's control plane (a lesson list)."""
        session = session_of(ask["device"])
        if session is None:
            text, error = "the device has no session in this worker any more", True
        else:
            try:
                text, error = await session.mcp.call(ask["tool"], ask["args"], timeout=ask["timeout"])
            except Exception as e:      # the session closed meanwhile, a timeout: the plane says so
                text, error = str(e) or type(e).__name__, True
        channel.write(writer, "shard.report", {"answer": {"id": ask["id"], "text": text[:200000], "error": error}})

    async def close(ask):
        session = session_of(ask["device"])
        if session is not None:
            await session.close(ask["reason"])

    calls = set()

    async def lifeline():
        # A bad line is skipped; only the end of the channel (the primary is
        # gone) stops this worker.
        async for msg in channel.lines(reader, "shard.command", LogThrottle(log), "primary"):
            if "release" in msg:
                ws.device_sessions.release(msg["release"]["device"], msg["release"]["session"])
            elif "call" in msg or "close" in msg:   # a tool call waits on the device: not on this loop
                t = asyncio.create_task(call(msg["call"]) if "call" in msg else close(msg["close"]))
                calls.add(t)
                t.add_done_callback(calls.discard)
            else:                       # the node drains
                ws.stop_accepting()
                await drain_sessions(services.sessions, float(msg["drain"]))
                channel.write(writer, "shard.report", {"drained": True})
        stop.set()
    watching = asyncio.create_task(lifeline())
    await channel.send(writer, "shard.report", {"ready": os.getpid(), "llm": services.llm_line()[:200]})
    log.info("worker %d serving (pid %d, WebSocket caps %d open / %d pending)", wid, os.getpid(),
             config["limits"]["ws_max_connections"], config["limits"]["ws_max_pending"])
    reported = held = None
    try:
        while not stop.is_set():
            count = len(services.sessions)
            if count != reported:
                await channel.send(writer, "shard.report", {"sessions": count})
                reported = count
            # What each device's session does, for the primary's console and API.
            now = sorted((describe(s) for s in services.sessions if s.device_id and not s.closed),
                         key=lambda d: d["device"])
            if now != held:
                await channel.send(writer, "shard.report", {"held": now})
                held = now
            try:
                await asyncio.wait_for(stop.wait(), REPORT_EVERY_S)
            except asyncio.TimeoutError:
                pass
    except (ConnectionError, OSError):
        pass
    log.info("worker %d stopping", wid)
    watching.cancel()
    await ws.stop()
    if mcp is not None:
        await mcp.close()
    if store is not None:
        await store.close()
    return 0


def main(argv):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    primary, channel, *listening = [int(a) for a in argv]
    if not _die_with_parent(primary):
        return 1
    code = asyncio.run(serve(channel, listening))
    # Sessions and MCP processes are closed by now. Skip the interpreter's
    # teardown: a model library's thread still inside C++ (the VAD thread
    # mid-batch) aborts the process there ("terminate called ...").
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
