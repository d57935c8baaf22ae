"""Who may connect: a bearer token (when tokens are configured) and, when
a device allowlist is configured, a known Device-Id.

Stock devices send headers; some clients can only use query parameters
(`?device-id=&client-id=&authorization=`), which stock servers accept too.
"""
import hmac
import urllib.parse
from typing import Callable, Mapping


class Refusal(Exception):
    """Why a connection is refused; str() is safe to log and to send."""


class Identity:
    __slots__ = ("device_id", "client_id", "token", "version")

    def __init__(self, device_id: str | None, client_id: str | None, token: str, version: int) -> None:
        self.device_id = device_id
        self.client_id = client_id
        self.token = token
        self.version = version


def identify(path: str, headers: Mapping[str, str]) -> Identity:
    """Device identity from the request headers, or the query string."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)

    def pick(header, param):
        v = headers.get(header)
        if v:
            return v.strip()
        vals = query.get(param)
        return vals[0].strip() if vals else ""

    auth = pick("Authorization", "authorization")
    token = auth[7:].strip() if auth.lower().startswith("bearer ") else auth
    version = pick("Protocol-Version", "protocol-version") or "1"
    try:
        version = int(version)
    except ValueError:
        version = 0
    return Identity(pick("Device-Id", "device-id") or None, pick("Client-Id", "client-id") or None, token, version)


OPEN, SHARED, OWN = "open", "shared", "own"     # how a connection proved itself (check's answer)


def check(identity: Identity, auth_config: dict,
          device_token_ok: Callable[[str | None, str], bool] | None = None) -> str:
    """Raise Refusal unless this identity may connect; else how it proved
    itself: OWN (a device's own token, device_token_ok(device_id, token),
    given by the control plane to an activated device: bound to its id),
    SHARED (a configured token, which any device may hold: its Device-Id
    is only a claim) or OPEN (no tokens configured)."""
    tokens = [t for t in auth_config.get("tokens") or [] if t]
    how = OPEN
    if tokens:
        if device_token_ok is not None and device_token_ok(identity.device_id, identity.token):
            how = OWN
        elif any(hmac.compare_digest(identity.token.encode(), t.encode()) for t in tokens):
            how = SHARED
        else:
            raise Refusal("missing or wrong token" if identity.token else "a token is required")
    allowed = auth_config.get("allowed_devices") or []
    if allowed and identity.device_id not in allowed:
        raise Refusal("device %s is not allowed" % (identity.device_id or "(no Device-Id)"))
    if identity.version not in (1, 2, 3):
        raise Refusal("Protocol-Version must be 1, 2 or 3")
    return how
