"""TLS for every listener that leaves the machine (config section `tls`).

With `tls.cert` and `tls.key` (PEM files: the certificate chain and its
key) the WebSocket is wss://, the HTTP port (OTA, the parents' API) is
https://, and the broker the server starts gets an mqtts:// listener with
the same files (broker/broker.py). Without them every listener is plain,
which is allowed only on loopback unless the operator sets
`tls.allow_plain: true` (a TLS proxy in front, say): `refuse_plain_exposure`
stops the server at start otherwise.

    ctx = tls.server_context(config)   # ssl.SSLContext, or None without a certificate
    tls.refuse_plain_exposure(config)  # ConfigError for a plain listener off loopback
    tls.listener_line("WebSocket", url, secure, host)   # the start-up log line
"""
from __future__ import annotations

import os
import ssl

from .. import config as configmod


def enabled(config: dict) -> bool:
    tls = config.get("tls") or {}
    return bool(tls.get("cert"))


def server_context(config: dict) -> ssl.SSLContext | None:
    """A server context holding tls.cert and tls.key (TLS 1.2 at least), or
    None without a certificate. A file that is missing or does not hold a
    certificate and its key is a ConfigError naming it."""
    tls = config.get("tls") or {}
    if not enabled(config):
        return None
    for key in ("cert", "key"):
        if not os.path.isfile(tls.get(key) or ""):
            raise configmod.ConfigError("tls.%s: %s is missing" % (key, tls.get(key)))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(tls["cert"], tls["key"])
    except (ssl.SSLError, OSError) as e:
        raise configmod.ConfigError("tls.cert %s and tls.key %s are not a PEM certificate and its key: %s"
                                    % (tls["cert"], tls.get("key"), e))
    return ctx


def refuse_plain_exposure(config: dict) -> None:
    """Without a certificate, the WebSocket and HTTP listeners (and the
    broker's, which follow server.host) are plain: refused off loopback
    unless tls.allow_plain says a proxy in front takes care of it."""
    host = config["server"]["host"]
    if enabled(config) or configmod.is_loopback(host) or (config.get("tls") or {}).get("allow_plain"):
        return
    raise configmod.ConfigError(
        "server.host %s is not loopback and no certificate is set: devices' voices, tokens and logins would "
        "cross the network in clear. Set tls.cert and tls.key (XIAOZHI_TLS_CERT, XIAOZHI_TLS_KEY), or "
        "tls.allow_plain: true when a TLS proxy stands in front (docs/deploy.md)" % host)


def listener_line(what: str, url: str, secure: bool, host: str) -> str:
    """One start-up line per listener: what it is, where, plain or TLS."""
    if secure:
        kind = "TLS"
    elif configmod.is_loopback(host):
        kind = "plain, loopback only"
    else:
        kind = "PLAIN on the network, tls.allow_plain"
    return "listening: %-10s %s (%s)" % (what, url, kind)
