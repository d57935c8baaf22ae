"""Is an HTTP request addressed to this machine's loopback by name?

DNS rebinding: a page on evil.example whose name the attacker re-points to
127.0.0.1 is, to the browser, same-origin with everything served there. Its
requests reach a server bound to loopback with `Host: evil.example` (and
`Origin: http://evil.example`), so the names a request carries, not the
address it arrived on, say whether a loopback page asked. A server on
loopback that asks no token answers only requests whose Host (and Origin,
when sent) is 127.0.0.0/8, ::1 or localhost, with or without a port.
"""
from __future__ import annotations

from typing import Mapping
from urllib.parse import urlsplit

from .config import is_loopback


def host_name(host: str) -> str:
    """The name of a Host header without its port ("[::1]:8003" -> "::1")."""
    host = host.strip()
    if host.startswith("["):
        end = host.find("]")
        return host[1:end] if end > 0 else ""
    name, colon, port = host.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        return name
    return host


def loopback_named(headers: Mapping[str, str]) -> bool:
    """True when Host names loopback and Origin, if sent, is a loopback page
    ("null", a file or sandboxed page, is not)."""
    if not is_loopback(host_name(headers.get("Host", ""))):
        return False
    origin = headers.get("Origin")
    if origin is None:
        return True
    try:
        parts = urlsplit(origin.strip())
        name = parts.hostname
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and name is not None and is_loopback(name)
