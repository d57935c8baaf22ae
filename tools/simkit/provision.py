"""The simulated board's broker login, asked of the server it boots against.

The server's own broker refuses anonymous clients; a real board gets its
login from a parent's provisioning or from activation. With --mqtt and an
http:// OTA URL, the simulator asks that server's control API for the
board's credentials (POST /api/devices/{id}/credentials, with
XIAOZHI_API_TOKEN when set), as `xiaozhi-server device provision
--write-config` would, so `make run` + `make sim --mqtt` work out of the box.
"""
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request

from simkit import use_host_hal


OTA_PATH = "/xiaozhi/ota/"   # the server's OTA route (xiaozhi-server, stock servers alike)


class ProvisionError(Exception):
    pass


class NotListening(ProvisionError):
    """Nothing answers at the server's HTTP port (yet)."""


def ota_url(url):
    """The OTA URL for what a user typed: a bare http://host:port gets the
    server's OTA path (asked there it answered 404, and the board fell back
    to its default server without a word); a URL with a path is kept."""
    u = urllib.parse.urlsplit(url)
    if u.path in ("", "/"):
        return urllib.parse.urlunsplit((u.scheme, u.netloc, OTA_PATH, u.query, ""))
    return url


def board_mac(state):
    """The board's MAC, its device id, as the host HAL keeps it in STATE/mac
    (the HAL makes one the first time, as at the board's first boot)."""
    use_host_hal()
    from hal.host.wifi import HostWifi
    return HostWifi(state, None).mac_str()


def credentials(ota_url, device_id, token=None, timeout=5, ca_file=None):
    """{"username", "password", ...} from the server behind this OTA URL
    (https:// checked against ca_file, the board's CA bundle)."""
    u = urllib.parse.urlsplit(ota_url)
    url = "%s://%s/api/devices/%s/credentials" % (u.scheme, u.netloc, urllib.parse.quote(device_id, safe=""))
    req = urllib.request.Request(url, data=b"{}", method="POST", headers={"Content-Type": "application/json"})
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        ctx = ssl.create_default_context(cafile=ca_file) if ca_file and url.startswith("https:") else None
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
            return json.loads(r.read())["mqtt"]
    except urllib.error.HTTPError as e:
        raise ProvisionError("the server said HTTP %d to %s (set XIAOZHI_API_TOKEN if it has an API token)"
                             % (e.code, url))
    except urllib.error.URLError as e:
        raise NotListening("no credentials from %s: %s" % (url, e.reason))
    except (OSError, ValueError, KeyError) as e:
        raise ProvisionError("no credentials from %s: %s" % (url, e))


def credentials_when_up(ota_url, device_id, token=None, wait_s=30, say=print, ca_file=None):
    """credentials(), asked again (1, 2, 4 ... s) while the server's HTTP
    port does not answer: `make run` opens its WebSocket before its HTTP
    port, and a board without a login retries a refused MQTT login for ever."""
    deadline = time.monotonic() + wait_s
    delay = 1
    while True:
        try:
            return credentials(ota_url, device_id, token, ca_file=ca_file)
        except NotListening as e:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            say("sim: %s; asking again in %d s" % (e, min(delay, left)))
            time.sleep(min(delay, left))
            delay = min(delay * 2, 8)
