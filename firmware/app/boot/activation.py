# The stock activation flow, loaded only when the OTA answer asks for it:
# the server does not know this device yet and handed out nothing secret.
# The code is logged and said aloud (`say(code)`: the rendered
# `activation_code` line, then each digit's, app/boot/ota.py passes it),
# and `<ota_url>activate` is POSTed every EVERY_MS while it answers 202 (a
# parent has not approved the code yet), for up to the code's timeout_ms
# (at most MAX_MS). The code is said again every SAY_EVERY_MS: a parent
# who missed it need not reboot the board.
#
#   ok = await wait_approved(ota_url, headers, answer["activation"], timeout_ms, say)
import json

import asyncio

import log
import http_client

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

EVERY_MS = const(3000)
MAX_MS = const(600000)
SAY_EVERY_MS = const(30000)
_log = log.get("ota")


async def wait_approved(url, headers, act, timeout_ms, say=None):
    """True once the server says the code was approved (200)."""
    _log.warn("activation code %s: %s", act["code"], act.get("message") or "ask a parent to approve it")
    said = -1
    target = url + ("activate" if url.endswith("/") else "/activate")
    left = min(act.get("timeout_ms") or MAX_MS, MAX_MS)
    body = json.dumps({"challenge": act.get("challenge") or ""})
    while left > 0:
        if say is not None and (said < 0 or said >= SAY_EVERY_MS):
            await say(act["code"])
            said = 0
        try:
            status, _ = await http_client.request("POST", target, headers, body, timeout_ms)
        except (OSError, ValueError) as e:
            status = 0
            _log.warn("activation at %s failed: %s", target, e)
        if status == 200:
            _log.info("activated")
            return True
        if status not in (0, 202):
            _log.warn("activation at %s answered HTTP %d: giving up", target, status)
            return False
        await asyncio.sleep(EVERY_MS / 1000)
        left -= EVERY_MS
        said += EVERY_MS
    _log.warn("activation code %s was not approved in time", act["code"])
    return False
