# OTA check at boot: POST the system info to the OTA URL, learn the
# WebSocket URL and token, and set the clock from the server time.
#
#   info = await check(cfg["ota_url"], identity, board.clock, version)
#   info -> {"url", "token", "version"} or None (unreachable / bad answer)
#
# Firmware upgrades and activation codes are not handled yet: an answer
# that asks for them is logged and the device carries on.
import json

import log
import proto
from app import http

_log = log.get("ota")

FIRMWARE_VERSION = "0.1.0"


def system_info(identity, board_name):
    # What stock devices report; the server reads application.version.
    return {"application": {"name": "xiaozhi-apps", "version": FIRMWARE_VERSION},
            "mac_address": identity.device_id, "uuid": identity.client_id,
            "board": {"type": board_name}}


async def check(url, identity, clock, board_name="host", timeout_ms=10000):
    headers = {"Device-Id": identity.device_id, "Client-Id": identity.client_id,
               "Activation-Version": "1", "Content-Type": "application/json",
               "User-Agent": "%s/%s" % (board_name, FIRMWARE_VERSION)}
    body = json.dumps(system_info(identity, board_name))
    try:
        status, data = await http.request("POST", url, headers, body, timeout_ms)
    except (OSError, ValueError) as e:
        _log.warn("OTA check at %s failed: %s", url, e)
        return None
    if status != 200:
        _log.warn("OTA check at %s answered HTTP %d", url, status)
        return None
    try:
        ans = proto.decode_json(data.decode())
        proto.check("ota.response", ans, "ota")
    except (proto.ProtoError, UnicodeError) as e:
        _log.warn("OTA answer refused: %s", e)
        return None
    ts = ans["server_time"]["timestamp"]
    clock.set_time(ts // 1000)
    if ans.get("activation"):
        _log.warn("server asks for activation code %s: not supported yet", ans["activation"]["code"])
    w = ans["websocket"]
    return {"url": w["url"], "token": w.get("token", ""), "version": w.get("version")}
