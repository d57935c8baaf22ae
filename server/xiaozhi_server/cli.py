"""xiaozhi-server: run the server (what `make run` calls).

    xiaozhi-server run [--config var/server.yaml] [--host H] [--port 8000]
                       [--http-port 8003] [--workers N] [--insecure] [-v]
    xiaozhi-server task|schedule|device|node ...   (api/cli.py: through a running server's API)
"""
import argparse
import asyncio
import logging
import os
import resource
import signal
import sys

from . import config as configmod

STOP_WAIT_S = 10.0      # after the drain: ports closed, children ended, or the process exits anyway


def _run(args):
    try:
        cfg = configmod.load(args.config)
    except configmod.ConfigError as e:
        print("xiaozhi-server: %s" % e, file=sys.stderr)
        return 2
    if args.host:
        cfg["server"]["host"] = args.host
    if args.port is not None:
        cfg["server"]["ws_port"] = args.port
    if args.http_port is not None:
        cfg["server"]["http_port"] = args.http_port
    if args.workers is not None:
        cfg["server"]["workers"] = args.workers
    try:
        configmod.check(cfg)
    except configmod.ConfigError as e:
        print("xiaozhi-server: %s" % e, file=sys.stderr)
        return 2
    # Run from the command line, "auto" is one worker process per core.
    cfg["server"]["workers"] = configmod.worker_count(cfg, auto=configmod.cores())
    host = cfg["server"]["host"]
    if not configmod.is_loopback(host) and not cfg["auth"]["tokens"] and not args.insecure:
        print("xiaozhi-server: binding %s exposes the server to the network: set a token "
              "(auth.tokens or XIAOZHI_TOKEN), or pass --insecure" % host, file=sys.stderr)
        return 2
    _raise_fd_limit()
    from .server import XiaozhiServer

    from .providers.registry import ProviderError
    from .runtime.registry import RegistryError

    async def main():
        try:
            server = XiaozhiServer(cfg)
        except (RegistryError, ProviderError, configmod.ConfigError, ValueError) as e:
            print("xiaozhi-server: %s" % e, file=sys.stderr)
            return 2
        # Ctrl-C stops at once; SIGTERM (a service manager's stop) and `node drain`
        # drain first: no new devices, replies finish, sessions closed (docs/deploy.md).
        # Both are caught from here on: a signal while the server starts or prints its
        # banner stops it too, instead of leaving its workers and broker behind.
        interrupted = asyncio.Event()
        terminated = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, interrupted.set)
        loop.add_signal_handler(signal.SIGTERM, terminated.set)
        starting = asyncio.ensure_future(server.start())
        signalled = [asyncio.ensure_future(e.wait()) for e in (interrupted, terminated)]
        await asyncio.wait([starting, *signalled], return_when=asyncio.FIRST_COMPLETED)
        for w in signalled:
            w.cancel()
        if not starting.done():
            starting.cancel()
            await asyncio.gather(starting, return_exceptions=True)
            print("xiaozhi-server stopping")
            return await _stop(server)
        if starting.exception() is not None:
            print("xiaozhi-server: could not start: %s" % starting.exception(), file=sys.stderr)
            await server.stop()
            return 1
        llm = server.pool.llm if server.pool is not None else server.services.llm_line()
        print("xiaozhi-server running")
        print("  WebSocket : %s" % server.ws.url)
        print("  OTA       : %s" % server.http.ota_url)
        print("  MQTT      : %s%s" % (server.broker.url, " (started here)" if server.broker.started_here else ""))
        if server.broker.tls is not None:
            print("  MQTT TLS  : %s" % server.broker.device_url(server.broker.tls["host"]))
        if server.control is not None:
            print("  console   : %s/console/ (%s)" % (server.http.base_url, _console_login(cfg)))
            print("  API       : %s/api/devices/{device_id} (docs/api.md)" % server.http.base_url)
        print("  voice     : ASR %s, TTS %s, VAD %s" % tuple(_provider(cfg, k) for k in ("asr", "tts", "vad")))
        print("  LLM       : %s" % llm)
        if server.node is not None:
            print("  store     : %s" % server.control.store.address)
            print("  node      : %s (OTA sends devices %s)" % (
                server.node.id, "to the least loaded node" if server.control.store.shared else "here"))
        if server.pool is not None:
            print("  workers   : %d processes share the WebSocket port (pids %s)"
                  % (server.pool.count, ", ".join(str(p) for p in server.pool.pids().values())))
        print("  config    : %s" % (args.config or configmod.DEFAULT_PATH))
        for line in _next_steps(cfg, server, llm):
            print(line)
        sys.stdout.flush()
        waits = [asyncio.ensure_future(e.wait()) for e in (interrupted, terminated, server.exit_requested)]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if terminated.is_set() and not interrupted.is_set():
            print("xiaozhi-server draining")
            sys.stdout.flush()
            drain = asyncio.ensure_future(server.drain())
            stop_now = asyncio.ensure_future(interrupted.wait())
            # The drain bounds itself (drain_timeout_s, then each close);
            # this is the backstop a service manager counts on.
            await asyncio.wait([drain, stop_now], return_when=asyncio.FIRST_COMPLETED,
                               timeout=float(cfg["fleet"]["drain_timeout_s"]) + STOP_WAIT_S)
        for w in waits:
            w.cancel()
        print("xiaozhi-server stopping")
        return await _stop(server)

    return asyncio.run(main())


async def _stop(server) -> int:
    sys.stdout.flush()
    try:
        await asyncio.wait_for(server.stop(), STOP_WAIT_S)
    except asyncio.TimeoutError:
        logging.getLogger("xiaozhi_server").error(
            "the server did not stop within %.0f s (a connection or task that does not end): "
            "exiting anyway", STOP_WAIT_S)
        logging.shutdown()
        os._exit(1)     # asyncio.run would wait for the stuck task again
    return 0


def _provider(cfg, section):
    """A provider section in a few words: its type (a fallback's chain)."""
    p = cfg.get(section) or {}
    kind = p.get("type") or "none"
    if kind == "fallback":
        return " > ".join(_provider({"x": q}, "x") for q in p.get("providers") or [])
    return kind + ("/" + p["voice"] if p.get("voice") else "")


def _console_login(cfg):
    if (cfg.get("control") or {}).get("api_token"):
        return "log in with control.api_token"
    return "no login asked on loopback"


def _next_steps(cfg, server, llm):
    """What a newcomer does next, as commands that work from the checkout."""
    from .control.devices import cli_command
    out = ["", "next:"]
    out.append("  make sim                a simulated board talking to this server (its card: var/sim/sd)")
    if cfg["auth"].get("tokens"):
        out.append("  a new device says a six-digit code: approve it on the console, or with")
        out.append("  %s device approve CODE" % cli_command())
    out.append("  a real board: set its OTA URL to %s" % server.http.ota_url)
    if not server.http.ssl and not configmod.is_loopback(cfg["server"]["host"]):
        out.append("  phones and browsers elsewhere need TLS: tls.cert / tls.key (docs/security.md, TLS)")
    if (llm or "").startswith("none"):
        out.append("  no language model: devices say so instead of chatting; set the llm section of")
        out.append("  var/server.yaml or OPENAI_BASE_URL / OPENAI_API_KEY (docs/providers.md)")
    return out


def _raise_fd_limit():
    """Every client connection is a file descriptor: take what the system
    allows (the soft limit is often 1024, the hard one much higher)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass


def _workers_arg(value):
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError("--workers takes a number or auto, not %r" % value)


def main(argv=None):
    p = argparse.ArgumentParser(prog="xiaozhi-server", description="xiaozhi-apps server")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the server")
    r.add_argument("--config", help="YAML config file (default %s, written on first start)" % configmod.DEFAULT_PATH)
    r.add_argument("--host", help="interface to bind (default 127.0.0.1)")
    r.add_argument("--port", type=int, help="WebSocket port (default 8000)")
    r.add_argument("--http-port", type=int, help="OTA/HTTP port (default 8003)")
    r.add_argument("--workers", type=_workers_arg,
                   help="processes holding the voice sessions (default server.workers: auto = one per core)")
    r.add_argument("--insecure", action="store_true", help="allow a non-loopback bind without a token")
    r.add_argument("-v", "--verbose", action="store_true")
    from .api import cli as control_cli
    control_cli.add_parsers(sub)
    args = p.parse_args(argv)
    if args.cmd in control_cli.COMMANDS:
        return control_cli.run(args)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname).1s %(name)s: %(message)s")
    if args.cmd == "run":
        return _run(args)
    return 2
