"""Builds the control plane from the server's config and its broker."""
from __future__ import annotations

import logging
import os
import uuid
from typing import TYPE_CHECKING

from . import config as configmod
from .api.routes import add_routes
from .broker.broker import Broker
from .broker.credentials import Credentials
from .control.devices import Devices
from .control.family import Family
from .broker.mqtt import MqttLink
from .control.pacer import Pacer
from .control.plane import ControlPlane
from .store.store import Store
from .store.devices import ActivationLimits

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from aiohttp import web

    from .runtime.registry import Registry


def _db_path(config):
    return (config.get("control") or {}).get("db_path") or configmod.DEFAULTS["control"]["db_path"]


def db_target(config: dict) -> str:
    """The control store: control.db_url (PostgreSQL, shared by nodes) or the SQLite file control.db_path."""
    return (config.get("control") or {}).get("db_url") or _db_path(config)


def auth_dir(config: dict) -> str:
    """Where the server secret and the broker's device logins (the broker
    started here) live (mqtt.auth_dir; default: `mqtt` beside the control database)."""
    return config["mqtt"].get("auth_dir") or os.path.join(os.path.dirname(_db_path(config)) or ".", "mqtt")


def conversation_store(config: dict) -> Store:
    """The control store (not open yet), keeping devices' conversations as
    the config's `conversation` section says: the control plane's, and each
    worker process's own connection to it (shard/worker.py)."""
    store = Store(db_target(config))
    store.conversations.keep_by_default = bool(config["conversation"]["keep_by_default"])
    return store


def broker(config: dict) -> Broker:
    """The Broker: the configured one (mqtt.url), else one started here on
    loopback that keeps the device logins (dynamic security)."""
    creds = Credentials(auth_dir(config)).load()
    m = configmod.MqttConfig.of(config)
    tls = configmod.TlsConfig.of(config)
    listener = dict(cert=tls.cert, key=tls.key, host=config["server"]["host"],
                    port=m.tls_port) if tls.cert else None
    return Broker(m.url, m.port, creds, admin_user=m.admin_user, admin_password=m.admin_password,
                  allow_open=m.allow_open_broker, tls=listener, ca_file=m.ca_file, link_port=m.link_port)


def create(config: dict, registry: Registry, broker: Broker, app: web.Application,
           node_id: str | None = None, store: Store | None = None, rules: Family | None = None) -> ControlPlane:
    """A ControlPlane talking to `broker` (a Broker: host, port, credentials),
    with its HTTP routes added to the aiohttp `app`; on `store` and with the
    family's `rules` when the caller shares them with its sessions (assemble.py)."""
    ctl = configmod.ControlConfig.of(config)

    def make_link(on_report, on_connect):
        link = MqttLink(broker.host, broker.port, broker.username, broker.password,
                        on_report=on_report, on_connect=on_connect,
                        backoff_max_s=ctl.reconnect_max_s,
                        identifier="xiaozhi-server-%s" % plane_id)
        link.tls_context = broker.link_tls_context()
        return link

    store = store if store is not None else conversation_store(config)
    store.fleet.node_ttl_s = float(config["fleet"]["node_ttl_s"])
    tokens = [t for t in config["auth"].get("tokens") or [] if t]
    act = config["activation"]
    devices = Devices(store.devices, broker.credentials, broker, auth_on=bool(tokens),
                      public_host=config["server"].get("public_host"), activation_ttl_s=float(act["ttl_s"]),
                      activation_limits=ActivationLimits(int(act["max_waiting"]), int(act["per_address"]),
                                                         int(act["per_prefix"])),
                      open_grants=not ctl.api_token and configmod.is_loopback(config["server"]["host"]))
    pacer = Pacer(ctl.max_in_flight, ctl.max_queued)
    plane_id = node_id or "n" + uuid.uuid4().hex[:12]
    plane = ControlPlane(registry, store, make_link, devices, pacer, plane_id,
                         rules if rules is not None else family(config, store))
    plane.conversation_max_age_s = float(config["conversation"]["keep_hours"]) * 3600
    token = ctl.api_token
    on_loopback = configmod.is_loopback(config["server"]["host"])
    add_routes(app, plane, tokens=[token] if token else [], token_required=not on_loopback,
               local_only=on_loopback)
    return plane


def family(config: dict, store: Store | None = None) -> Family:
    """The limits and usage of each device, on the control store (its own
    connection to it when `store` is None: a worker process's sessions)."""
    ctl = configmod.ControlConfig.of(config)
    return Family((store or Store(db_target(config))).family, ctl.default_timezone, int(ctl.usage_retention_days))


async def adopt_shared_secret(plane: ControlPlane, broker: Broker) -> None:
    """Nodes sharing a store derive device credentials from one secret: the
    first node's, kept in the store. This node's file is replaced by it (its
    workers read the file), so a device's token is good on every node."""
    store, creds = plane.store, broker.credentials
    if not store.shared or creds is None:
        return
    await store.open()
    secret = await store.fleet.shared_secret(creds.secret_text())
    if secret != creds.secret_text():
        log.warning("using the server secret the other nodes share (from the store) instead of %s", creds.secret_path)
        creds.adopt(secret)
        if not broker.configured:
            broker.password = creds.server_password()
            if not broker.admin_password_configured:
                broker.admin_password = creds.admin_password()
