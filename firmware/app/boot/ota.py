# OTA check at boot: POST the system info to the OTA URL, learn the
# WebSocket URL and token (and the control broker's login), and set the
# clock from the server time.
#
#   await configure(device)     # at boot: check, then the device uses the answer
#   info = await check(cfg["ota_url"], identity, board.clock, board_name, token=stored_token)
#   info -> {"url", "token", "version", "mqtt"} or None (unreachable / bad answer)
#   info["mqtt"] -> {"url", "username", "password"} or None
#
# An answer with `activation` (the server does not know this device yet)
# runs the stock activation flow (app/boot/activation.py, loaded only then); once
# a parent approved the code the check is asked again and now carries the
# device's token and login. A device that has a token sends it
# (Authorization), so the server knows it. Firmware upgrades are not
# handled yet: the device carries on.
import gc
import json

import log
import proto
import http_client

_log = log.get("ota")

FIRMWARE_VERSION = "0.1.0"


def system_info(identity, board_name):
    # What stock devices report; the server reads application.version.
    return {"application": {"name": "xiaozhi-apps", "version": FIRMWARE_VERSION},
            "mac_address": identity.device_id, "uuid": identity.client_id,
            "board": {"type": board_name}}


async def _ask(url, headers, body, timeout_ms):
    try:
        status, data = await http_client.request("POST", url, headers, body, timeout_ms)
    except (OSError, ValueError) as e:
        import trust
        why = trust.refusal(e) if url.startswith("https://") else None
        if why:
            _log.error("OTA server certificate of %s refused: %s (not asked in plain)", url, why)
        else:
            _log.warn("OTA check at %s failed: %s", url, e)
        return None
    if status != 200:
        _log.warn("OTA check at %s answered HTTP %d", url, status)
        return None
    # The boot's garbage out of the way first: the answer's schema is read
    # in one piece of a few KB, and the unix port's 256 KB heap is tight here.
    gc.collect()
    try:
        ans = proto.decode_json(data.decode())
        proto.check("ota.response", ans, "ota")
    except (proto.ProtoError, UnicodeError) as e:
        _log.warn("OTA answer refused: %s", e)
        return None
    return ans


async def check(url, identity, clock, board_name="host", timeout_ms=10000, token="", say=None):
    headers = {"Device-Id": identity.device_id, "Client-Id": identity.client_id,
               "Activation-Version": "1", "Content-Type": "application/json",
               "User-Agent": "%s/%s" % (board_name, FIRMWARE_VERSION)}
    if token:
        headers["Authorization"] = "Bearer " + token
    body = json.dumps(system_info(identity, board_name))
    ans = await _ask(url, headers, body, timeout_ms)
    if ans is None:
        return None
    clock.set_time(ans["server_time"]["timestamp"] // 1000)
    if ans.get("activation"):
        from app.boot import activation
        if await activation.wait_approved(url, headers, ans["activation"], timeout_ms, say):
            ans = await _ask(url, headers, body, timeout_ms) or ans
    w = ans["websocket"]
    m = ans.get("control_mqtt") or {}
    mqtt = {"url": m["url"], "username": m["username"], "password": m.get("password", "")} \
        if m.get("username") else None
    return {"url": w["url"], "token": w.get("token", ""), "version": w.get("version"), "mqtt": mqtt}


async def say_code(dev, code):
    """The activation code aloud: the rendered words, then each digit in the
    board's language (app/entry/prompts.py); the `activation` event too."""
    frames = await dev.entry.say("activation_code")
    for d in code:
        if "0" <= d <= "9":
            frames += await dev.entry.say("digit_" + d)
    dev.bus.emit("activation", code=code, frames=frames)


async def configure(dev, timeout_ms=10000):
    """Ask the device's OTA URL and apply the answer: the WebSocket URL, token
    and protocol version, and the broker login (with the broker the answer
    names, unless mqtt.url configures one). An unreachable server changes nothing.
    `ota_url` may be a list (the nodes of a fleet, docs/deploy.md): they are
    asked in turn, the one that answered last first."""
    urls = dev.cfg["ota_url"]
    if isinstance(urls, str):
        urls = [urls]
    start = dev.ota_index % len(urls)
    info = None
    for i in range(len(urls)):
        k = (start + i) % len(urls)
        info = await check(urls[k], dev.identity, dev.board.clock, dev.board.name, timeout_ms, dev.token,
                           lambda code: say_code(dev, code))
        if info is not None:
            dev.ota_index = k
            break
    if info is None:
        # Not silent: a wrong OTA URL (a bare http://host:port answers 404)
        # must not look like the server it names.
        _log.warn("no OTA answer: the WebSocket stays %s", dev.ws_url)
        dev.bus.emit("error", message="OTA check failed at %s; using %s" % (dev.cfg["ota_url"], dev.ws_url))
        return
    dev.ws_url = info["url"]
    dev.token = info["token"] or dev.token
    if info.get("version"):
        dev.version = info["version"]
    m = info.get("mqtt")
    if m:
        # The login is taken as stock firmware takes its mqtt section; the
        # broker too, unless one is configured (mqtt.url: a broker reached
        # another way than the server names, e.g. over TLS by name).
        mc = dict(dev.cfg.get("mqtt") or {})
        if not mc.get("url"):
            mc["url"] = m["url"]
        mc["user"], mc["password"] = m["username"], m["password"]
        dev.cfg["mqtt"] = mc
