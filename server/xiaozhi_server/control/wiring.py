"""Builds the control plane from the server's config and its broker."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .. import config as configmod
from .api import add_routes
from .broker import Broker
from .credentials import Credentials
from .devices import Devices
from .mqtt import MqttLink
from .pacer import Pacer
from .plane import ControlPlane
from .store import Store

if TYPE_CHECKING:
    from aiohttp import web

    from ..runtime.registry import Registry


def _db_path(config):
    return (config.get("control") or {}).get("db_path") or configmod.DEFAULTS["control"]["db_path"]


def auth_dir(config: dict) -> str:
    """Where the server secret, the broker's password file and ACL live
    (mqtt.auth_dir; default: `mqtt` beside the control database)."""
    return config["mqtt"].get("auth_dir") or os.path.join(os.path.dirname(_db_path(config)) or ".", "mqtt")


def broker(config: dict) -> Broker:
    """The Broker: the configured one (mqtt.url), else one started here on
    loopback that checks the credentials made from the server secret."""
    creds = Credentials(auth_dir(config)).load()
    return Broker(config["mqtt"].get("url"), config["mqtt"].get("port"), creds)


def create(config: dict, registry: Registry, broker: Broker, app: web.Application) -> ControlPlane:
    """A ControlPlane talking to `broker` (a Broker: host, port, credentials),
    with its HTTP routes added to the aiohttp `app`."""
    ctl = config.get("control") or {}

    def make_link(on_report, on_connect):
        return MqttLink(broker.host, broker.port, broker.username, broker.password,
                        on_report=on_report, on_connect=on_connect,
                        backoff_max_s=float(ctl.get("reconnect_max_s", 5.0)))

    store = Store(_db_path(config))
    tokens = [t for t in config["auth"].get("tokens") or [] if t]
    devices = Devices(store, broker.credentials, broker, auth_on=bool(tokens),
                      public_host=config["server"].get("public_host"))
    pacer = Pacer(int(ctl.get("max_in_flight", 8)), int(ctl.get("max_queued", 32)))
    plane = ControlPlane(registry, store, make_link, devices, pacer)
    token = ctl.get("api_token")
    add_routes(app, plane, tokens=[token] if token else [],
               token_required=not configmod.is_loopback(config["server"]["host"]))
    return plane
