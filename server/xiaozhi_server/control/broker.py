"""The MQTT broker of the control plane.

With no broker configured (`mqtt.url` / MQTT_URL), the server uses one on
127.0.0.1:`mqtt.port` (1883), starting Debian's mosquitto there if nothing
listens yet. The broker it started is stopped with the server; one that was
already running (another server, a system service) is left alone, with a
warning: this server cannot give it device credentials.

The broker started here refuses anonymous clients and reads the password
file and ACL that credentials.py writes; `reload()` makes it read them again
(SIGHUP) and returns once it accepts the new credentials, so a device given
them a moment later can connect.
"""
import asyncio
import logging
import os
import pwd
import shutil
import socket
import tempfile
import signal
import urllib.parse

import aiomqtt

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
    def __init__(self, url=None, port=None, credentials=None):
        """credentials: a loaded credentials.Credentials for the broker started
        here (the server's own user, the password file and the ACL)."""
        self.configured = bool(url)
        self.host, self.port, self.username, self.password = parse_url(
            url or "mqtt://%s:%d" % (DEFAULT_HOST, port or DEFAULT_PORT))
        self.credentials = credentials
        if not self.configured and credentials is not None:
            from .credentials import SERVER_USER
            self.username, self.password = SERVER_USER, credentials.server_password()
        self._proc = None
        self._dir = None
        self.log_path = None

    @property
    def url(self):
        return "mqtt://%s:%d" % (self.host, self.port)

    @property
    def started_here(self):
        return self._proc is not None

    @property
    def authenticated(self):
        """True when this broker enforces our device credentials and ACL."""
        return self.started_here and self.credentials is not None

    async def start(self):
        if self.configured:
            return self
        if listening(self.host, self.port):
            log.warning("MQTT: something already listens on %s:%d; using it, but this server did not start it, "
                        "so it does not check device credentials or the ACL (stop it, or set mqtt.port)",
                        self.host, self.port)
            return self
        exe = shutil.which("mosquitto") or ("/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else None)
        if exe is None:
            raise BrokerError("no MQTT broker: install Debian's mosquitto (make setup does) or set MQTT_URL")
        if self.credentials is not None and not os.path.exists(self.credentials.passwd_path):
            # First start: the server's own user; devices follow once the store is open.
            await asyncio.to_thread(self.credentials.write_broker_files, [])
        self._dir = tempfile.mkdtemp(prefix="xiaozhi-mqtt-")
        conf = os.path.join(self._dir, "mosquitto.conf")
        self.log_path = os.path.join(self._dir, "mosquitto.log")
        with open(conf, "w") as f:
            # Its log goes to a file (warnings and errors: a dropped message is a
            # warning), not to a pipe nobody reads once it runs: a full pipe would
            # stop the broker. Config errors still come on stderr, read below.
            f.write("listener %d %s\npersistence false\nlog_dest file %s\nlog_type error\nlog_type warning\n"
                    % (self.port, self.host, self.log_path))
            if self.credentials is None:
                f.write("allow_anonymous true\n")
            else:
                # Started by root, mosquitto would switch to its own user and lose
                # the 0600 files: it runs as whoever runs the server.
                f.write("allow_anonymous false\npassword_file %s\nacl_file %s\nuser %s\n"
                        % (os.path.abspath(self.credentials.passwd_path), os.path.abspath(self.credentials.acl_path),
                           pwd.getpwuid(os.getuid()).pw_name))
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
        try:
            with open(self.log_path, errors="replace") as f:
                err = (err + " " + f.read()[-2000:]).strip()
        except OSError:
            pass
        await self.stop()
        raise BrokerError("mosquitto did not start on %s:%d %s" % (self.host, self.port, err))

    async def reload(self, user=None, password=None, timeout_s=5.0):
        """Have the broker started here read its password file and ACL again;
        with user/password, wait until it accepts them. False when it is not
        ours (nothing to reload) or did not take them in time."""
        if not self.authenticated or self._proc.returncode is not None:
            return False
        self._proc.send_signal(signal.SIGHUP)
        if user is None:
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            try:
                async with aiomqtt.Client(self.host, self.port, username=user, password=password,
                                          identifier="xiaozhi-probe-" + os.urandom(4).hex(), timeout=timeout_s):
                    return True
            except aiomqtt.MqttError:
                if loop.time() > deadline:
                    log.warning("MQTT broker did not accept the new credentials of %s within %.0f s", user, timeout_s)
                    return False
                await asyncio.sleep(0.02)

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
