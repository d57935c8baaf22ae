"""The whole server in one object: providers, server MCP processes, the
MQTT broker, the WebSocket endpoint and the HTTP endpoint.

    server = XiaozhiServer(config)
    await server.start()     # everything listening; URLs on the object
    ...
    await server.stop()
"""
from __future__ import annotations

import logging

from . import config as configmod
from .logthrottle import throttle_server_logs
from .mcp.server_tools import start_server_tools
from .services import Services
from .transport.guard import fit_to_fd_limit
from .transport.http_server import HttpServer
from .transport.ws_server import WsServer

log = logging.getLogger(__name__)

class XiaozhiServer:
    def __init__(self, config, services=None, with_broker=True, with_mcp=True, services_factory=None):
        """With server.workers above 1 the sessions live in worker processes
        (shard/), each building its Services from the config, or through
        services_factory ("module:function"); this process keeps the control
        plane, the broker and the HTTP endpoints."""
        configmod.check(config)
        fit_to_fd_limit(config["limits"])
        throttle_server_logs(float(config["limits"]["log_interval_s"]))
        self.config = config
        self.pool = None
        workers = configmod.worker_count(config)
        if workers > 1:
            if services is not None:
                raise ValueError("worker processes build their own services: pass services_factory, not services")
            from .shard.pool import ControlServices, WorkerPool
            services = ControlServices(config)
            self.pool = WorkerPool(config, workers, device_tokens=with_broker, with_mcp=with_mcp,
                                   services_factory=services_factory)
        self.services = services or Services(config)
        self.broker = None
        if with_broker:
            from .control import wiring
            self.broker = wiring.broker(config)
        self.ws = WsServer(self.services)
        self.http = HttpServer(self.services, self._ws_url_for)
        self.http.workers = self.pool
        self.with_mcp = with_mcp
        self.mcp_processes = None
        # The parents' control plane speaks through the broker, so it comes with it.
        self.control = None
        if self.broker is not None:
            self.control = wiring.create(config, self.services.registry, self.broker, self.http.app)
            # Device credentials: handed out by OTA to activated devices, checked by the WebSocket.
            self.http.devices = self.control.devices
            self.ws.device_token_ok = self.control.devices.token_valid

    def _ws_url_for(self, host):
        return "ws://%s:%d%s" % (host, self.ws.port, self.ws.path)

    async def start(self) -> XiaozhiServer:
        await self.services.start()   # models and clients load before any device connects
        if self.broker is not None:
            await self.broker.start()
            self.http.broker_url = self.broker.url
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
        return self

    async def stop(self) -> None:
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
