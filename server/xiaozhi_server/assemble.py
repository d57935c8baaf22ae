"""The one place a process's parts are built and wired together, for each
role a process plays:

    parts = assemble(config, "single")               # sessions and the control plane in one process
    parts = assemble(config, "primary", pool=pool)   # the control plane; workers hold the sessions
    parts = assemble(config, "control")              # the control plane only: no voice models
    parts = assemble(config, "worker", store=await worker_store(config), device_tokens=True)

server.py starts and stops what it gets (shard/worker.py does for a
worker). What the family's control store lends the sessions (limits, care
records, kept conversations, the household's wake floor) is handed to
`Services` as constructor arguments here and nowhere else: a new shared
part is one argument of Services and one line below.

`make_services(config, **shared)` builds a process's Services when the
caller brings its own providers (tests, benchmarks, a worker's
services_factory); it must pass `shared` on to Services.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from .services import ControlServices, Services
from .transport.http_server import HttpServer
from .transport.ws_server import WsServer

if TYPE_CHECKING:
    from .broker.broker import Broker
    from .control.plane import ControlPlane
    from .store.store import Store

log = logging.getLogger(__name__)

SINGLE, PRIMARY, WORKER, CONTROL = "single", "primary", "worker", "control"
ROLES = (SINGLE, PRIMARY, WORKER, CONTROL)


@dataclass
class Parts:
    services: Services | ControlServices
    ws: WsServer
    http: HttpServer | None = None          # not in a worker
    broker: Broker | None = None            # with_broker only
    control: ControlPlane | None = None     # the parents' control plane: with the broker
    store: Store | None = None              # a worker's own connection to the control store (it closes it)


def ws_url(ws: WsServer, host: str) -> str:
    """The WebSocket URL a device is sent to at `host` (OTA, the fleet)."""
    return "%s://%s:%d%s" % ("wss" if ws.ssl else "ws", host, ws.port, ws.path)


async def worker_store(config: dict) -> Store | None:
    """A worker's own connection to the control store the primary migrated;
    None when it cannot be reached (the talk goes on; the lexicon still filters)."""
    from . import wiring
    store = wiring.conversation_store(config)
    try:
        return await store.open()
    except Exception as e:
        log.warning("the control store is not reachable (%s): no limits, blocked topics, transcripts, "
                    "memory or kept conversations", getattr(e, "message", None) or e)
        return None


def assemble(config: dict, role: str, *, with_broker: bool = True, device_tokens: bool = False,
             make_services: Callable[..., Services] | None = None, store: Store | None = None,
             pool: Any = None, session_of: Callable | None = None,
             on_drain_asked: Callable[[], None] | None = None) -> Parts:
    """The parts of a process playing `role` (ROLES). A worker: `store` is
    its open store (worker_store) or None, `device_tokens` whether devices
    bring their own tokens. The others: `with_broker` brings the MQTT broker
    and the control plane with it; `pool` is the primary's WorkerPool;
    `session_of` and `on_drain_asked` are the server's answers to its plane."""
    if role not in ROLES:
        raise ValueError("role: %r is not one of %s" % (role, ", ".join(ROLES)))
    make = make_services or Services
    if role == WORKER:
        return _worker(config, make, store, device_tokens)

    # The control store comes with the broker: the plane's, and in a single
    # process its sessions' too (workers open their own: worker_store).
    store = rules = None
    if with_broker:
        from . import wiring
        store = wiring.conversation_store(config)
        rules = wiring.family(config, store)
    services: Services | ControlServices
    if role != SINGLE:      # the sessions live in the workers, or nowhere
        services = ControlServices(config, family=rules)
    elif store is not None:
        from .fleet.wake import WakeArbiter, window_s
        services = make(config, family=rules, care=store.care, conversations=store.conversations,
                        wake_floor=WakeArbiter(store.wake, window_s(config)))
    else:
        services = make(config)
    broker = wiring.broker(config) if store is not None else None
    ws = WsServer(services)     # type: ignore[arg-type]
    http = HttpServer(services, lambda host: ws_url(ws, host))   # type: ignore[arg-type]
    http.workers = pool
    if broker is None or store is None:
        return Parts(services, ws, http)
    from .fleet.nodes import new_node_id
    node_id = new_node_id(config["server"].get("public_host"), config["server"]["ws_port"])
    control = wiring.create(config, services.registry, broker, http.app, node_id, store=store, rules=rules)
    control.on_drain_asked = on_drain_asked
    if session_of is not None:
        control.session_of = session_of
    _hand_devices(control, http, ws)
    return Parts(services, ws, http, broker, control)


def _hand_devices(control, http, ws):
    """Device credentials: handed out by OTA to activated devices, checked by
    the WebSocket. (Untyped: the transports' hooks are plain attributes, None
    until a control plane runs, and transport/ imports nothing of control/.)"""
    http.devices = control.devices
    http.on_seen = control.saw_device     # listed for the parents from its first OTA check
    ws.device_token_ok = control.devices.token_valid


def _worker(config: dict, make: Callable[..., Services], store: Store | None, device_tokens: bool) -> Parts:
    """Voice sessions only: the family's parts come from the worker's own
    store connection (the plane and its store live in the primary)."""
    shared: dict[str, Any] = {}
    credentials = None
    if device_tokens:
        from . import wiring
        from .broker.credentials import Credentials
        from .fleet.wake import WakeArbiter, window_s
        credentials = Credentials(wiring.auth_dir(config)).load()
        # Limits are asked even when the store is away: it refuses nothing then (control/family.py).
        shared["family"] = wiring.family(config, store)
        if store is not None:
            # The household's wake words are arbitrated in the store every node shares.
            shared.update(care=store.care, conversations=store.conversations,
                          wake_floor=WakeArbiter(store.wake, window_s(config)))
    services = make(config, **shared)
    ws = WsServer(services)
    if credentials is not None:
        ws.device_token_ok = credentials.token_valid
    return Parts(services, ws, store=store)
