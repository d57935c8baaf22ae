"""Who gets device credentials (MQTT user and password, WebSocket token),
and the activation codes a device shows until a parent approves it.

    devices = Devices(store.devices, credentials, broker, auth_on=True, public_host=None)
    await devices.start()                       # the broker's logins checked
    creds = await devices.provision("kid1")     # a parent's CLI / API call
    await devices.revoke("kid1")                # its broker login gone, nobody else's
    kind, what = await devices.ota_grant(device_id, client_id, token)

A device's broker password is random, made whenever it is handed out
(provisioning, an OTA answer that grants credentials) and set in the
broker through its dynamic security plugin (broker/dynsec.py), which
keeps only its hash: the one handed out last is the one that works. A
broker this server cannot manage (no admin login) checks nothing: the
answer then carries the password derived from the server secret, and
says `broker_enforces: false`.

The policy (docs/security.md):
- A parent provisions a device through the control API (the CLI's
  `devices provision`): the answer carries its credentials.
- The OTA endpoint hands them out only when device tokens are configured
  (`auth.tokens`), and only to a device that presents its own token or whose
  Device-Id and Client-Id an approved activation bound. Any other caller gets
  an activation code and nothing secret; `devices approve CODE` binds it.
- With no tokens configured (the loopback default) the OTA answer carries
  nothing secret: devices are provisioned by a parent.
- Waiting codes expire (`activation.ttl_s`) and are limited in all, per
  source address (an IPv6 address counts as its /64, which one host may
  hold whole) and per device-id prefix (a MAC's first three octets), so an
  unknown caller cannot take every waiting place; a caller over a limit is
  told to come back later (`("busy", why)`). A parent sees the waiting codes
  and can clear one.
"""
import ipaddress
import logging
import re
import secrets
import time

from ..logthrottle import LogThrottle
from . import checks
from ..errors import BadRequest
from ..store.devices import ADDED, CODE_TAKEN, PREFIX_FULL, SOURCE_FULL, ActivationLimits

log = logging.getLogger(__name__)

ACTIVATION_TTL_S = 600
CODE_DIGITS = 6
_MAC = re.compile(r"^([0-9a-fA-F]{2})[:-]?([0-9a-fA-F]{2})[:-]?([0-9a-fA-F]{2})[:-]?[0-9a-fA-F]{2}[:-]?"
                  r"[0-9a-fA-F]{2}[:-]?[0-9a-fA-F]{2}$")
PREFIX_CHARS = 8       # the prefix of a device id that is not a MAC


def id_prefix(device_id: str) -> str:
    """The part of a device id a maker shares: a MAC's first three octets
    (its OUI), else the first PREFIX_CHARS characters."""
    m = _MAC.match(device_id)
    if m:
        return ":".join(m.groups()).lower()
    return device_id[:PREFIX_CHARS]


def source_key(address: str | None) -> str | None:
    """The address an activation is counted against: an IPv4 address, or the
    /64 of an IPv6 one (an IPv4-mapped one as IPv4)."""
    if not address:
        return None
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return address[:64]
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.version == 6:
        return str(ipaddress.ip_network((ip, 64), strict=False))
    return str(ip)


class Devices:
    def __init__(self, records, credentials, broker, auth_on=False, public_host=None,
                 activation_ttl_s=ACTIVATION_TTL_S, activation_limits=ActivationLimits(), open_grants=False):
        """open_grants: no device tokens, no API token, loopback only (the
        `make run` default): any local process may provision a device through
        the API already, so OTA hands a device its broker login as stock
        firmware expects, and the board reaches the console without a
        parent's step (docs/sim.md's first session)."""
        self.records = records      # store.devices: credentials given, activation codes waiting
        self.creds = credentials
        self.broker = broker
        self.auth_on = auth_on
        self.open_grants = open_grants and not auth_on
        self.public_host = public_host
        self.activation_ttl_s = activation_ttl_s
        self.activation_limits = activation_limits
        self.log_throttle = LogThrottle(log)     # a caller over a limit may ask again and again
        # Devices a parent removed while this server runs: their WebSocket
        # token (derived from the server secret) is refused until a parent
        # provisions or approves them again.
        self._revoked: set[str] = set()

    async def start(self) -> None:
        """The server's role on the broker; devices provisioned before the
        broker kept logins get theirs, with the password their boards hold
        (derived from the server secret)."""
        dyn = self.broker.dynsec
        if dyn is None:
            return
        await dyn.ensure_server_role(self.broker.username)
        users = await dyn.users()
        for device_id in await self.records.device_ids():
            if self.creds.mqtt_user(device_id) not in users:
                await dyn.set_device(device_id, self.creds.mqtt_password(device_id))
                log.info("device %s: its broker login moved to the broker's own list", device_id)

    # ---- credentials ----

    def token_valid(self, device_id: str | None, token: str) -> bool:
        """A device's own WebSocket token (the transport's auth check asks)."""
        return device_id not in self._revoked and self.creds.token_valid(device_id, token)

    async def credentials(self, device_id: str) -> dict:
        """The device's credentials, with a new broker password the broker
        takes from now on (the one handed out before stops working)."""
        dyn = self.broker.dynsec
        if dyn is None:
            password = self.creds.mqtt_password(device_id)
        else:
            password = secrets.token_urlsafe(24)
            await dyn.set_device(device_id, password)
        host = self.public_host or self.broker.host
        return {"device_id": device_id,
                "mqtt": {"url": self.broker.device_url(host),
                         "username": self.creds.mqtt_user(device_id), "password": password},
                "token": self.creds.device_token(device_id),
                "broker_enforces": dyn is not None}

    async def provision(self, device_id: str, client_id: str | None = None, via: str = "provisioned") -> dict:
        """Record the device and give it credentials (the broker takes its login at once)."""
        self._revoked.discard(device_id)
        if await self.records.add_device(device_id, client_id, via):
            log.info("device %s provisioned (%s)", device_id, via)
        return await self.credentials(device_id)

    async def revoke(self, device_id: str) -> bool:
        """Forget the device: its broker login goes (the broker closes its
        connection), every other device keeps its own. False if unknown."""
        self._revoked.add(device_id)       # its WebSocket token too, on this node
        known = await self.records.remove_device(device_id)
        dyn = self.broker.dynsec
        removed = await dyn.remove_device(device_id) if dyn is not None else False
        if known or removed:
            log.info("device %s revoked", device_id)
        return known or removed

    # ---- the OTA endpoint's questions ----

    async def ota_grant(self, device_id: str | None, client_id: str | None, token: str,
                        source: str | None = None) -> tuple[str, dict | str | None]:
        """What an OTA answer may carry for this caller (source: its address):
        ("open", None)          no device tokens configured: nothing secret to give
        ("granted", creds)      an authenticated device: its credentials
        ("activate", code dict) anyone else: an activation code (None without a Client-Id)
        ("busy", why)           a limit on waiting codes keeps this caller from a new one"""
        if not self.auth_on:
            if self.open_grants and device_id and client_id and _usable_id(device_id):
                return "granted", await self.provision(device_id, via="ota")
            return "open", None
        if not device_id:
            return "activate", None
        if token and self.token_valid(device_id, token):
            return "granted", await self.provision(device_id, via="token")
        dev = await self.records.get_device(device_id)
        if dev is not None and client_id and dev["client_id"] and secrets.compare_digest(dev["client_id"], client_id):
            return "granted", await self.credentials(device_id)
        if not client_id:
            return "activate", None
        a = await self.records.activation_of(device_id, client_id)
        if a is None:
            for _ in range(5):
                code = "%0*d" % (CODE_DIGITS, secrets.randbelow(10 ** CODE_DIGITS))
                added = await self.records.add_activation(
                    code, device_id, client_id, secrets.token_hex(16), self.activation_ttl_s,
                    source_key(source), id_prefix(device_id), self.activation_limits)
                if isinstance(added, tuple):
                    added, (holder, count, dropped) = added
                    self.log_throttle.log(logging.WARNING, ("activation evicted", holder),
                                          "activation codes full (%d waiting): the oldest code of %s (one of %d "
                                          "waiting from that address, device %s) is dropped for device %s from %s",
                                          self.activation_limits.waiting, holder, count, dropped, device_id, source)
                if added == ADDED:
                    a = await self.records.activation_of(device_id, client_id)
                    log.warning("device %s asks to be activated: code %s (approve it on the console's Devices "
                                "page, or with `%s device approve %s`)", device_id, code, cli_command(), code)
                    break
                if added != CODE_TAKEN:
                    why = {SOURCE_FULL: "too many activation codes wait for this address",
                           PREFIX_FULL: "too many activation codes wait for device ids like this one"}.get(
                        added, "too many activation codes wait for approval")
                    self.log_throttle.log(logging.WARNING, ("activation refused", added),
                                          "no activation code for %s from %s: %s", device_id, source, why)
                    return "busy", why
            else:
                return "busy", "no free activation code"
        left_s = max(1.0, a["expires_at"] - time.time())
        return "activate", {"code": a["code"], "challenge": a["challenge"],
                            "message": "Ask a parent to approve code %s" % " ".join(a["code"]),
                            "timeout_ms": int(left_s * 1000)}

    async def waiting_activations(self) -> list[dict]:
        """The codes waiting for a parent: code, device_id, since, expires (epoch s)."""
        return [{"code": a["code"], "device_id": a["device_id"], "since": a["created_at"],
                 "expires": a["expires_at"]} for a in await self.records.waiting_activations()]

    async def clear_activation(self, code: str) -> bool:
        """Forget a waiting code (its device asks for a new one at its next OTA check)."""
        cleared = await self.records.clear_activation(code)
        if cleared:
            log.info("activation code %s cleared by a parent", code)
        return cleared

    async def activation_state(self, device_id: str | None, client_id: str | None) -> int:
        """The `activate` endpoint's answer: 200 bound, 202 waiting, 404 no code asked for."""
        if not self.auth_on:
            return 200
        dev = await self.records.get_device(device_id) if device_id else None
        if dev is not None and client_id and dev["client_id"] == client_id:
            return 200
        a = await self.records.activation_of(device_id, client_id) if device_id and client_id else None
        return 202 if a is not None else 404

    async def approve(self, code: str) -> str | None:
        """Approve a waiting code: its device id, or None (unknown or expired)."""
        a = await self.records.approve_activation(code)
        if a is None:
            return None
        self._revoked.discard(a["device_id"])
        log.info("device %s activated with code %s", a["device_id"], code)
        return a["device_id"]


def _usable_id(device_id):
    try:
        checks.device_id(device_id)
        return True
    except BadRequest:
        return False


def cli_command():
    """The command line tool as a parent types it here: the one beside this
    Python (.venv/bin/xiaozhi-server from the checkout), else on PATH."""
    import os
    import sys
    beside = os.path.join(os.path.dirname(sys.executable), "xiaozhi-server")
    if os.path.exists(beside):
        rel = os.path.relpath(beside)
        return rel if not rel.startswith("..") else beside
    return "xiaozhi-server"
