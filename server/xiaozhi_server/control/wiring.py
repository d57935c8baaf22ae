"""Builds the control plane from the server's config and its broker."""
from .. import config as configmod
from .api import add_routes
from .mqtt import MqttLink
from .plane import ControlPlane
from .store import Store


def create(config, registry, broker, app):
    """A ControlPlane talking to `broker` (a Broker: host, port, credentials),
    with its HTTP routes added to the aiohttp `app`."""
    ctl = config.get("control") or {}

    def make_link(on_report, on_connect):
        return MqttLink(broker.host, broker.port, broker.username, broker.password,
                        on_report=on_report, on_connect=on_connect,
                        backoff_max_s=float(ctl.get("reconnect_max_s", 5.0)))

    plane = ControlPlane(registry, Store(ctl.get("db_path") or configmod.DEFAULTS["control"]["db_path"]), make_link)
    token = ctl.get("api_token")
    add_routes(app, plane, tokens=[token] if token else [],
               token_required=not configmod.is_loopback(config["server"]["host"]))
    return plane
