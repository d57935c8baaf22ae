"""The MQTT broker of the control plane.

With no broker configured (`mqtt.url` / MQTT_URL), the server uses one on
127.0.0.1:1883, starting Debian's mosquitto there if nothing listens yet.
The broker it started is stopped with the server; one that was already
running (another server, a system service) is left alone.
"""
import asyncio
import logging
import os
import shutil
import socket
import tempfile
import urllib.parse

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 1883


class BrokerError(Exception):
    pass


def parse_url(url):
    """(host, port, username, password) of mqtt://user:pass@host:port."""
    u = urllib.parse.urlsplit(url if "://" in url else "mqtt://" + url)
    if u.scheme not in ("mqtt", "tcp"):
        raise BrokerError("MQTT url must be mqtt://host:port, not %s" % url)
    return u.hostname or DEFAULT_HOST, u.port or DEFAULT_PORT, u.username, u.password


def listening(host, port, timeout=0.2):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class Broker:
    def __init__(self, url=None):
        self.configured = bool(url)
        self.host, self.port, self.username, self.password = parse_url(url or "mqtt://%s:%d" % (DEFAULT_HOST, DEFAULT_PORT))
        self._proc = None
        self._dir = None

    @property
    def url(self):
        return "mqtt://%s:%d" % (self.host, self.port)

    @property
    def started_here(self):
        return self._proc is not None

    async def start(self):
        if self.configured or listening(self.host, self.port):
            return self
        exe = shutil.which("mosquitto") or ("/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else None)
        if exe is None:
            raise BrokerError("no MQTT broker: install Debian's mosquitto (make setup does) or set MQTT_URL")
        self._dir = tempfile.mkdtemp(prefix="xiaozhi-mqtt-")
        conf = os.path.join(self._dir, "mosquitto.conf")
        with open(conf, "w") as f:
            f.write("listener %d %s\nallow_anonymous true\npersistence false\n" % (self.port, self.host))
        self._proc = await asyncio.create_subprocess_exec(
            exe, "-c", conf, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        for _ in range(100):
            if listening(self.host, self.port):
                log.info("started mosquitto on %s:%d", self.host, self.port)
                return self
            if self._proc.returncode is not None:
                break
            await asyncio.sleep(0.02)
        err = (await self._proc.stderr.read()).decode(errors="replace").strip() if self._proc.returncode is not None else ""
        await self.stop()
        raise BrokerError("mosquitto did not start on %s:%d %s" % (self.host, self.port, err))

    async def stop(self):
        if self._proc is not None and self._proc.returncode is None:
            self._proc.terminate()
            try:
                await asyncio.wait_for(self._proc.wait(), 3)
            except asyncio.TimeoutError:
                self._proc.kill()
                await self._proc.wait()
        self._proc = None
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
