# Device configuration: config.json on the board's flash (on the host, in
# the state directory), merged over DEFAULTS one level deep. A missing or
# broken file means the defaults, with a warning: the device must boot.
import json

import log

_log = log.get("config")

DEFAULTS = {
    "device_name": "xiaozhi",
    "wifi": {"ssid": "", "password": "", "timeout_ms": 15000},
    "ota_url": "http://127.0.0.1:8003/xiaozhi/ota/",
    "server_url": "ws://127.0.0.1:8000/xiaozhi/v1/",
    "token": "",
    "protocol_version": 1,
    "listen_mode": "auto",
    "tools_page_bytes": 8000,
    "connect_at_boot": True,
    # Reconnect by itself after a lost connection (stock devices wait for
    # the next wake word): attempts, first delay, cap.
    "reconnect": {"attempts": 0, "first_ms": 1000, "max_ms": 30000},
    "clock_speed": 1,
    # Parents' control over MQTT (empty url: off), local time for
    # repeating alarms, and the offline command table (empty: the asset).
    "mqtt": {"url": "", "keepalive": 60, "user": "", "password": ""},
    # wss://, mqtts:// and https:// servers are checked against this CA
    # bundle (PEM or DER file; lib/trust.py); without one they are refused.
    # With one, plain http://, ws:// and mqtt:// are refused unless allow_plain.
    "tls": {"ca_file": "", "allow_plain": False},
    "timezone_offset_min": 0,
    # An alarm whose time passed while the board had no power runs at the
    # next power-on only this late at most; later it is skipped and reported.
    "alarm_grace_min": 30,
    "commands_path": "",
    # The child's language: the lines the device says by itself (the voice
    # menu, assets/prompts/KEY.LANG.opus) are spoken in it.
    "language": "zh",
}


def merge(base, over):
    out = {}
    for k in base:
        out[k] = base[k]
    for k in over:
        if isinstance(out.get(k), dict) and isinstance(over[k], dict):
            d = dict(out[k])
            d.update(over[k])
            out[k] = d
        else:
            out[k] = over[k]
    return out


def load(path):
    try:
        with open(path) as f:
            over = json.loads(f.read())
    except OSError:
        return merge(DEFAULTS, {})
    except ValueError as e:
        _log.warn("%s is not valid JSON (%s): using defaults", path, e)
        return merge(DEFAULTS, {})
    if not isinstance(over, dict):
        _log.warn("%s is not a JSON object: using defaults", path)
        return merge(DEFAULTS, {})
    return merge(DEFAULTS, over)
