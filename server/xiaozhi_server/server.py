"""The whole server in one object: providers, server MCP processes, the
MQTT broker, the WebSocket endpoint and the HTTP endpoint, and its place
among the nodes sharing its control store (fleet/nodes.py). Its parts
are built and wired by assemble.py; this object starts and stops them.

    server = XiaozhiServer(config)
    await server.start()     # everything listening; URLs on the object
    ...
    await server.drain()     # no new devices; replies finish; sessions closed (SIGTERM)
    await server.stop()

`exit_requested` is set once a drain that `xiaozhi-server node drain`
asked for is over: the command line then stops the process.
"""
from __future__ import annotations

import asyncio
import logging

from . import config as configmod
from .assemble import CONTROL, PRIMARY, SINGLE, assemble, ws_url
from .logthrottle import throttle_server_logs
from .mcp.server_tools import start_server_tools
from .transport.guard import fit_to_fd_limit
from .transport import tls

log = logging.getLogger(__name__)

class XiaozhiServer:
    def __init__(self, config, services=None, with_broker=True, with_mcp=True, services_factory=None, role=None):
        """With server.workers above 1 the sessions live in worker processes
        (shard/), each building its Services from the config, or through
        services_factory ("module:function"); this process keeps the control
        plane, the broker and the HTTP endpoints. role="control": the
        control plane only, no voice models. `services`: a test's or a
        benchmark's own, without a control store (assemble.py wires the
        store's parts into the Services it builds)."""
        configmod.check(config)
        tls.refuse_plain_exposure(config)
        fit_to_fd_limit(config["limits"])
        throttle_server_logs(float(config["limits"]["log_interval_s"]))
        self.config = config
        self.pool = None
        workers = configmod.worker_count(config)
        if role is None:
            role = PRIMARY if workers > 1 else SINGLE
        if services is not None and role == PRIMARY:
            raise ValueError("worker processes build their own services: pass services_factory, not services")
        if services is not None and (with_broker or role != SINGLE):
            raise ValueError("a server with a control store builds its own services (assemble.py)")
        if role == PRIMARY:
            from .shard.pool import WorkerPool
            self.pool = WorkerPool(config, workers, device_tokens=with_broker, with_mcp=with_mcp,
                                   services_factory=services_factory)
        parts = assemble(config, role, with_broker=with_broker, pool=self.pool,
                         make_services=(lambda cfg: services) if services is not None else None,
                         session_of=self._session_of, on_drain_asked=self._drain_asked)
        self.services = parts.services
        self.ws = parts.ws
        self.http = parts.http
        self.broker = parts.broker
        # The parents' control plane speaks through the broker, so it comes with it.
        self.control = parts.control
        self.with_mcp = with_mcp and role != CONTROL     # server MCP tools are for voice sessions
        self.mcp_processes = None
        self.node = None
        self.exit_requested = asyncio.Event()
        self._drain = None      # the drain under way (a Future), once one began

    def _session_of(self, device_id):
        """The device's open voice session on this node, in this process or a
        worker's, as the control plane sees it (session/view.py); or None."""
        if self.pool is not None:
            return self.pool.view_of(device_id)
        from .session.view import LocalView
        session = next((s for s in self.services.sessions if s.device_id == device_id and not s.closed), None)
        return LocalView(session) if session is not None else None

    def _held_devices(self):
        """The devices with a voice session on this node."""
        if self.pool is not None:
            return self.pool.held_devices()
        return {s.device_id for s in self.services.sessions if s.device_id and not s.closed}

    def _ws_url_for(self, host):
        return ws_url(self.ws, host)

    async def start(self) -> XiaozhiServer:
        await self.services.start()   # models and clients load before any device connects
        if self.control is not None:
            from . import wiring
            await wiring.adopt_shared_secret(self.control, self.broker)
        if self.broker is not None:
            await self.broker.start()
            # Loopback (no TLS): the URL the broker listens at, as before; with
            # TLS: its mqtts:// listener at the host the device asked.
            self.http.broker_url_for = self.broker.device_url if self.broker.tls else lambda host: self.broker.url
        if self.control is not None:
            await self.control.start()
        if self.pool is not None:
            await self.pool.start()     # each worker starts its own MCP processes
            self.ws.port = self.pool.port
        else:
            if self.with_mcp:
                self.mcp_processes = await start_server_tools(self.config, self.services)
            await self.ws.start()
        await self.http.start()
        if self.control is not None:
            await self._join_fleet()
        self._log_listeners()
        return self

    def _log_listeners(self) -> None:
        """One line per listener: where, and plain or TLS (docs/security.md)."""
        host = self.config["server"]["host"]
        lines = [tls.listener_line("WebSocket", self.ws.url, self.ws.ssl is not None, host),
                 tls.listener_line("HTTP", self.http.base_url + " (OTA, API)", self.http.ssl is not None, host)]
        if self.broker is not None and self.broker.started_here:
            lines += [tls.listener_line("MQTT", url, secure, bind) for url, secure, bind in self.broker.listeners()]
        for line in lines:
            log.info("%s", line)

    # ---- among the nodes ----

    def sessions(self) -> int:
        return sum(self.pool.sessions()) if self.pool is not None else len(self.services.sessions)

    def public_ws_url(self) -> str | None:
        """The URL other nodes send devices to: server.public_host, else the
        bound address when it is one; None for a wildcard bind without a public host."""
        host = self.config["server"].get("public_host") or self.config["server"]["host"]
        if not host or host in ("0.0.0.0", "::", "[::]"):
            return None
        return self._ws_url_for(host)

    async def _join_fleet(self) -> None:
        from .fleet.nodes import Node
        fleet = self.config["fleet"]
        url = self.public_ws_url()
        if url is None and self.control.store.shared:
            log.warning("server.public_host is not set and the server binds every interface: other nodes cannot "
                        "send devices here (set XIAOZHI_PUBLIC_HOST)")
        self.node = Node(self.control.store, self.control.node_id, url,
                         "%s://%s:%d" % ("https" if self.http.ssl else "http",
                                         self.config["server"].get("public_host") or self.http.host, self.http.port),
                         self.sessions, float(fleet["heartbeat_s"]), on_drain_asked=self._drain_asked,
                         held=self._held_devices)
        await self.node.start()
        self.http.fleet = self.node

    def _drain_asked(self) -> None:
        """`node drain` (here, or for this node on another): drain, then ask to exit."""
        async def drain_then_exit():
            await self.drain()
            self.exit_requested.set()
        if self._drain is None:
            asyncio.ensure_future(drain_then_exit())

    async def drain(self, timeout_s: float | None = None) -> None:
        """Stop taking devices: no new WebSocket connection, no device sent
        here by OTA; replies under way finish (up to fleet.drain_timeout_s);
        then every session is closed, so devices reconnect through OTA."""
        if self._drain is None:
            self._drain = asyncio.ensure_future(self._drain_now(
                float(self.config["fleet"]["drain_timeout_s"]) if timeout_s is None else timeout_s))
        await asyncio.shield(self._drain)

    async def _drain_now(self, timeout_s):
        from .shard.drain import drain_sessions
        log.info("draining: no new sessions; replies under way get up to %.0f s", timeout_s)
        if self.node is not None:
            await self.node.drain()
        if self.pool is not None:
            await self.pool.drain(timeout_s)
        else:
            self.ws.stop_accepting()
            await drain_sessions(self.services.sessions, timeout_s)
        log.info("drained")

    async def stop(self) -> None:
        if self.node is not None:
            await self.node.stop()
        await self.ws.stop()
        if self.pool is not None:
            await self.pool.stop()
        await self.http.stop()
        if self.control is not None:
            await self.control.stop()
        if self.mcp_processes is not None:
            await self.mcp_processes.close()
        if self.broker is not None:
            await self.broker.stop()
