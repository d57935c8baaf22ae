"""Who gets device credentials (MQTT user and password, WebSocket token),
and the activation codes a device shows until a parent approves it.

    devices = Devices(store, credentials, broker, auth_on=True, public_host=None)
    await devices.start()                       # broker files from the store
    creds = await devices.provision("kid1")     # a parent's CLI / API call
    kind, what = await devices.ota_grant(device_id, client_id, token)

The policy (docs/security.md):
- A parent provisions a device through the control API (the CLI's
  `devices provision`): the answer carries its credentials.
- The OTA endpoint hands them out only when device tokens are configured
  (`auth.tokens`), and only to a device that presents its own token or whose
  Device-Id and Client-Id an approved activation bound. Any other caller gets
  an activation code and nothing secret; `devices approve CODE` binds it.
- With no tokens configured (the loopback default) the OTA answer carries
  nothing secret: devices are provisioned by a parent.
"""
import asyncio
import logging
import secrets

log = logging.getLogger(__name__)

ACTIVATION_TTL_S = 600
CODE_DIGITS = 6


class Devices:
    def __init__(self, store, credentials, broker, auth_on=False, public_host=None):
        self.store = store
        self.creds = credentials
        self.broker = broker
        self.auth_on = auth_on
        self.public_host = public_host
        self._files = asyncio.Lock()
        # Devices a parent removed while this server runs: their WebSocket
        # token (derived from the server secret) is refused until a parent
        # provisions or approves them again.
        self._revoked: set[str] = set()

    async def start(self) -> None:
        """Write the broker's files for every known device and have it read them."""
        await self._sync()

    async def _sync(self):
        """Write the broker's files for every known device; return once the
        broker has read them (a device given its login next can connect)."""
        async with self._files:
            ids = await self.store.device_ids()
            await asyncio.to_thread(self.creds.write_broker_files, ids)
            await self.broker.reload()

    # ---- credentials ----

    def token_valid(self, device_id: str | None, token: str) -> bool:
        """A device's own WebSocket token (the transport's auth check asks)."""
        return device_id not in self._revoked and self.creds.token_valid(device_id, token)

    async def revoke(self, device_id: str) -> None:
        """After the store forgot the device: the broker's files without it
        (its MQTT login stops working), its WebSocket token refused here."""
        self._revoked.add(device_id)
        await self._sync()

    def credentials(self, device_id: str) -> dict:
        host = self.public_host or self.broker.host
        return {"device_id": device_id,
                "mqtt": {"url": "mqtt://%s:%d" % (host, self.broker.port),
                         "username": self.creds.mqtt_user(device_id),
                         "password": self.creds.mqtt_password(device_id)},
                "token": self.creds.device_token(device_id),
                "broker_enforces": self.broker.authenticated}

    async def provision(self, device_id: str, client_id: str | None = None, via: str = "provisioned") -> dict:
        """Record the device (the broker learns its user at once) and its credentials."""
        self._revoked.discard(device_id)
        if await self.store.add_device(device_id, client_id, via):
            await self._sync()
            log.info("device %s provisioned (%s)", device_id, via)
        return self.credentials(device_id)

    # ---- the OTA endpoint's questions ----

    async def ota_grant(self, device_id: str | None, client_id: str | None, token: str) -> tuple[str, dict | None]:
        """What an OTA answer may carry for this caller:
        ("open", None)          no device tokens configured: nothing secret to give
        ("granted", creds)      an authenticated device: its credentials
        ("activate", code dict) anyone else: an activation code (None when none can be made)"""
        if not self.auth_on:
            return "open", None
        if not device_id:
            return "activate", None
        if token and self.token_valid(device_id, token):
            return "granted", await self.provision(device_id, via="token")
        dev = await self.store.get_device(device_id)
        if dev is not None and client_id and dev["client_id"] and secrets.compare_digest(dev["client_id"], client_id):
            return "granted", self.credentials(device_id)
        return "activate", await self._activation(device_id, client_id)

    async def _activation(self, device_id, client_id):
        if not client_id:
            return None
        a = await self.store.activation_of(device_id, client_id)
        if a is None:
            for _ in range(5):
                code = "%0*d" % (CODE_DIGITS, secrets.randbelow(10 ** CODE_DIGITS))
                if await self.store.add_activation(code, device_id, client_id, secrets.token_hex(16), ACTIVATION_TTL_S):
                    a = await self.store.activation_of(device_id, client_id)
                    log.warning("device %s asks to be activated: code %s (approve with "
                                "`xiaozhi-server devices approve %s`)", device_id, code, code)
                    break
            else:
                log.warning("no activation code for %s: too many codes wait for approval", device_id)
                return None
        return {"code": a["code"], "challenge": a["challenge"],
                "message": "Ask a parent to approve code %s" % " ".join(a["code"]),
                "timeout_ms": int(ACTIVATION_TTL_S * 1000)}

    async def activation_state(self, device_id: str | None, client_id: str | None) -> int:
        """The `activate` endpoint's answer: 200 bound, 202 waiting, 404 no code asked for."""
        if not self.auth_on:
            return 200
        dev = await self.store.get_device(device_id) if device_id else None
        if dev is not None and client_id and dev["client_id"] == client_id:
            return 200
        a = await self.store.activation_of(device_id, client_id) if device_id and client_id else None
        return 202 if a is not None else 404

    async def approve(self, code: str) -> str | None:
        """Approve a waiting code: its device id, or None (unknown or expired)."""
        a = await self.store.approve_activation(code)
        if a is None:
            return None
        self._revoked.discard(a["device_id"])
        await self._sync()
        log.info("device %s activated with code %s", a["device_id"], code)
        return a["device_id"]
