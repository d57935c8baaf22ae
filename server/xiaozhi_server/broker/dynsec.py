"""Device logins kept by the broker itself: mosquitto 2's dynamic security
plugin, managed over MQTT (`$CONTROL/dynamic-security/v1`) with the
server's admin login, so every node sharing the broker provisions and
revokes devices, and nothing but the broker holds a device's password (as
its salted PBKDF2 hash).

    dyn = DynSec(host, port, admin_user, admin_password)
    await dyn.ensure_server_role(server_user)        # at start, idempotent
    await dyn.set_device(device_id, password)        # create, or give a new password
    await dyn.remove_device(device_id)               # its client (kicked at once) and role
    await dyn.device_ids()                           # devices the broker knows

Each device is one client (its user name: credentials.mqtt_user) bound to
one role of its own, whose ACL lets it receive and subscribe to its own
`cmd/#` and publish to its own `rpt/#`; everything else is refused by the
plugin's default ACL (no publish, no subscribe). The server's role writes
every `cmd/#` and reads every `rpt/#`.

For the broker the server starts, `prepare_file()` writes the plugin's
file before mosquitto reads it: the admin and server logins with today's
passwords, the devices kept as they are.
"""
from __future__ import annotations

import asyncio
import base64
import glob
import hashlib
import json
import logging
import os
import secrets

import aiomqtt

from .credentials import mqtt_user, write_private

log = logging.getLogger(__name__)

CONTROL_TOPIC = "$CONTROL/dynamic-security/v1"
RESPONSE_TOPIC = CONTROL_TOPIC + "/response"
ADMIN_ROLE = "admin"
SERVER_ROLE = "xiaozhi-server"
DEVICE_ROLE_PREFIX = "xiaozhi-device."
FILE_NAME = "dynamic-security.json"
TIMEOUT_S = 10.0
ATTEMPTS = 3            # an admin connection another node's took over is made again
_ITERATIONS = 101       # the plugin's own default
_PLUGIN_GLOBS = ("/usr/lib/*/mosquitto_dynamic_security.so", "/usr/lib/mosquitto_dynamic_security.so",
                 "/usr/lib/*/mosquitto/mosquitto_dynamic_security.so", "/usr/local/lib/mosquitto_dynamic_security.so")


class DynSecError(Exception):
    pass


def plugin_path() -> str:
    for pattern in _PLUGIN_GLOBS:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    raise DynSecError("mosquitto's dynamic security plugin (mosquitto_dynamic_security.so) is not installed: "
                      "Debian's mosquitto package ships it")


def _password_fields(password: str) -> dict:
    salt = os.urandom(12)
    dk = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, _ITERATIONS, 64)
    return {"password": base64.b64encode(dk).decode(), "salt": base64.b64encode(salt).decode(),
            "iterations": _ITERATIONS}


def _acl(kind, topic):
    return {"acltype": kind, "topic": topic, "priority": 0, "allow": True}


def server_acls() -> list[dict]:
    return [_acl("publishClientSend", "snlp/v1/+/cmd/#"), _acl("subscribePattern", "snlp/v1/+/rpt/#"),
            _acl("publishClientReceive", "snlp/v1/+/rpt/#"), _acl("unsubscribePattern", "#")]


def device_acls(device_id: str) -> list[dict]:
    # subscribeLiteral: a topic filter is checked as written, so the board's
    # cmd/# and its two topics pass and nothing with a wildcard elsewhere does.
    cmd, rpt = "snlp/v1/%s/cmd/" % device_id, "snlp/v1/%s/rpt/#" % device_id
    return [_acl("subscribeLiteral", cmd + "#"), _acl("subscribeLiteral", cmd + "ctl"),
            _acl("subscribeLiteral", cmd + "task"), _acl("publishClientReceive", cmd + "#"),
            _acl("publishClientSend", rpt), _acl("unsubscribePattern", "#")]


def device_role(device_id: str) -> str:
    return DEVICE_ROLE_PREFIX + mqtt_user(device_id)


def prepare_file(path: str, admin_user: str, admin_password: str, server_user: str, server_password: str) -> None:
    """The plugin's file for the broker started here, before it starts: the
    admin and server logins (re)set to these passwords, all else kept."""
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except FileNotFoundError:
        cfg = {}
    except ValueError as e:
        raise DynSecError("%s is not the dynamic security plugin's JSON (%s): move it away to start afresh "
                          "(every device then needs to be provisioned again)" % (path, e))
    cfg.setdefault("defaultACLAccess", {"publishClientSend": False, "publishClientReceive": True,
                                        "subscribe": False, "unsubscribe": True})
    roles = {r["rolename"]: r for r in cfg.setdefault("roles", [])}
    roles[ADMIN_ROLE] = {"rolename": ADMIN_ROLE, "acls": [
        _acl("publishClientSend", CONTROL_TOPIC + "/#"), _acl("publishClientReceive", CONTROL_TOPIC + "/#"),
        _acl("subscribePattern", CONTROL_TOPIC + "/#"), _acl("unsubscribePattern", "#")]}
    roles[SERVER_ROLE] = {"rolename": SERVER_ROLE, "acls": server_acls()}
    clients = {c["username"]: c for c in cfg.setdefault("clients", [])}
    for c in clients.values():
        # Devices made before the binding get it (set_device has why).
        if any(r.get("rolename", "").startswith(DEVICE_ROLE_PREFIX) for r in c.get("roles") or []):
            c["clientid"] = c["username"]
    clients[admin_user] = dict(clients.get(admin_user, {}), username=admin_user,
                               roles=[{"rolename": ADMIN_ROLE}], **_password_fields(admin_password))
    clients[server_user] = dict(clients.get(server_user, {}), username=server_user,
                                roles=[{"rolename": SERVER_ROLE}], **_password_fields(server_password))
    cfg["roles"], cfg["clients"] = list(roles.values()), list(clients.values())
    cfg.setdefault("groups", [])
    write_private(path, json.dumps(cfg, indent=1))


class DynSec:
    """The plugin's control topic, spoken with the admin login. Commands of
    one call go in one message; calls from this node take turns."""

    def __init__(self, host: str, port: int, admin_user: str, admin_password: str) -> None:
        self.host, self.port = host, port
        self.admin_user, self.admin_password = admin_user, admin_password
        self._turn = asyncio.Lock()

    async def run(self, *commands: dict, ok_errors: tuple[str, ...] = ()) -> list[dict]:
        """Send the commands; their answers in order. An answer with an error
        not in ok_errors raises DynSecError."""
        async with self._turn:
            for attempt in range(ATTEMPTS):
                try:
                    answers = await asyncio.wait_for(self._exchange(commands), TIMEOUT_S)
                    break
                except (aiomqtt.MqttError, asyncio.TimeoutError) as e:
                    if isinstance(e, aiomqtt.MqttCodeError) and "authori" in str(e).lower():
                        raise DynSecError("the MQTT broker at %s:%d refused the admin login %r: set mqtt.admin_user "
                                          "and mqtt.admin_password to its dynamic security admin"
                                          % (self.host, self.port, self.admin_user))
                    if attempt == ATTEMPTS - 1:
                        raise DynSecError("the MQTT broker at %s:%d did not answer its dynamic security commands: %s"
                                          % (self.host, self.port, e or "timed out"))
        for cmd, answer in zip(commands, answers):
            err = answer.get("error")
            if err and err not in ok_errors:
                raise DynSecError("the broker refused %s: %s" % (cmd["command"], err))
        return answers

    async def _exchange(self, commands):
        tagged = [dict(c, correlationData=secrets.token_hex(8)) for c in commands]
        want = {c["correlationData"] for c in tagged}
        got = {}
        async with aiomqtt.Client(self.host, self.port, username=self.admin_user, password=self.admin_password,
                                  identifier=self.admin_user, timeout=TIMEOUT_S) as client:
            await client.subscribe(RESPONSE_TOPIC, qos=1)
            await client.publish(CONTROL_TOPIC, json.dumps({"commands": tagged}).encode(), qos=1)
            async for message in client.messages:
                try:
                    body = json.loads(message.payload)
                except ValueError:
                    continue
                for r in body.get("responses") or []:
                    if r.get("correlationData") in want:
                        got[r["correlationData"]] = r
                if want <= set(got):
                    break
        return [got[c["correlationData"]] for c in tagged]

    # ---- what the server asks ----

    async def ensure_server_role(self, server_user: str | None) -> None:
        """The server's role with today's ACL, given to its login (on a broker
        another party runs, its login may have been made without it)."""
        await self.run({"command": "createRole", "rolename": SERVER_ROLE, "acls": server_acls()},
                       ok_errors=("Role already exists",))
        if server_user:
            await self._give_role(server_user, SERVER_ROLE)

    async def _give_role(self, user, role):
        # mosquitto 2.0 answers "Internal error" for a role the client has already.
        answer = (await self.run({"command": "getClient", "username": user}, ok_errors=("Client not found",)))[0]
        client = (answer.get("data") or {}).get("client")
        if client is not None and role not in [r.get("rolename") for r in client.get("roles") or []]:
            await self.run({"command": "addClientRole", "username": user, "rolename": role})

    async def set_device(self, device_id: str, password: str) -> None:
        """The device's role and client, or a new password for its client."""
        user, role = mqtt_user(device_id), device_role(device_id)
        # The login is bound to one client id, its user name, on every port:
        # the devices' ports set that anyway (use_username_as_clientid), and
        # on the server's own loopback port a device login cannot take a
        # node's client id (public at /health) and knock its link off.
        answers = await self.run(
            {"command": "createRole", "rolename": role, "acls": device_acls(device_id)},
            {"command": "createClient", "username": user, "password": password, "clientid": user,
             "roles": [{"rolename": role}]},
            ok_errors=("Role already exists", "Client already exists"))
        if answers[1].get("error"):
            await self.run({"command": "setClientPassword", "username": user, "password": password},
                           {"command": "setClientId", "username": user, "clientid": user})
            await self._give_role(user, role)

    async def remove_device(self, device_id: str) -> bool:
        """Delete the device's client (the broker closes its connection) and
        role; False when the broker had no such client."""
        answers = await self.run({"command": "deleteClient", "username": mqtt_user(device_id)},
                                 {"command": "deleteRole", "rolename": device_role(device_id)},
                                 ok_errors=("Client not found", "Role not found"))
        return not answers[0].get("error")

    async def users(self) -> set[str]:
        answer = (await self.run({"command": "listClients", "verbose": False, "count": -1, "offset": 0}))[0]
        return set((answer.get("data") or {}).get("clients") or [])
