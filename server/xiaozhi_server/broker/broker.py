"""The MQTT broker of the control plane.

With no broker configured (`mqtt.url` / MQTT_URL), the server uses one on
127.0.0.1:`mqtt.port` (1883), starting Debian's mosquitto there if nothing
listens yet. The broker it started is stopped with the server; one that was
already running (another server, a system service) is left alone, with a
warning: this server cannot give it device credentials.

The broker started here refuses anonymous clients and keeps the device
logins itself: mosquitto's dynamic security plugin, which every node
manages over MQTT with the admin login (broker/dynsec.py; its file is
`dynamic-security.json` in mqtt.auth_dir). A configured broker is managed
the same way when mqtt.admin_user and mqtt.admin_password are set.
Whatever the broker, the server checks at start that it refuses an
anonymous client and a wrong password, and refuses to start if not
(`mqtt.allow_open_broker: true` lets it go on, with a warning, for a
broker that must stay open: a test's, a closed network's).
It binds each client id to the login (`use_username_as_clientid`):
a device's client id is its user name whatever it sends, so one device
cannot take another's broker session by sending its client id. The
server's own link connects on a loopback port of its own
(`server_address()`), so nothing logging in as the server elsewhere takes
the link's session. The logins are the plugin's, shared by every
listener, so a device's login is checked there too; but each device login
is bound to one client id, its user name (dynsec.py), so on that port it
cannot take a node's client id and knock the link off. It ends with
the server, even one killed with SIGKILL (setpriv --pdeathsig): a broker left
behind would hold the port with the old files and no one to reload it.

With a certificate (config `tls`, given here as `tls`) it also listens
with TLS on server.host:`mqtt.tls_port` (8883), with the same logins and
ACL as the plain port, which stays on loopback: devices are handed
mqtts:// (`device_url`).

Its log (a file, not a pipe nobody may read) is read here as it grows:
"Client X already connected, closing old connection" is a session takeover,
handed to `on_takeover(device_id)` (two boards with one device id fight
for the session: control/duplicates.py); the file is emptied past
LOG_KEEP_BYTES, so connects and refused logins cannot fill the disk.
"""
import asyncio
import logging
import os
import pwd
import random
import re
import shutil
import socket
import tempfile
import urllib.parse

import aiomqtt

from .. import protocol as proto
from . import dynsec

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 1883
DEFAULT_TLS_PORT = 8883
LOG_KEEP_BYTES = 1 << 20
START_ATTEMPTS = 3
MAX_PACKET_BYTES = proto.MQTT_MAX_PAYLOAD + 1024     # the payload, its topic and the header
LOG_POLL_S = 0.25
_TAKEOVER = re.compile(r"Client (\S+) already connected, closing old connection")
DEFAULT_ADMIN_USER = "xiaozhi-admin"
DEVICE_USER_PREFIX = "d."       # credentials.mqtt_user: "d." + the percent-encoded device id


def device_of_user(user):
    """The device id of a device's MQTT user name (credentials.mqtt_user), or None."""
    if not user.startswith(DEVICE_USER_PREFIX):
        return None
    return urllib.parse.unquote(user[len(DEVICE_USER_PREFIX):])


def _free_loopback_port():
    """A free loopback port above the kernel's range for outgoing connections
    (a port from that range could be taken by a connect meanwhile)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    for port in random.sample(range(high + 1, 65536) if high < 65000 else range(1025, low), 100):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise BrokerError("no free loopback port for the server's own MQTT listener")


def _ending_with_us(exe):
    """The command that runs `exe` with SIGTERM as its parent-death signal.
    util-linux's setpriv sets it and execs (a preexec_fn calling prctl could
    deadlock in the child of a process with threads)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", exe] if setpriv else [exe]


class BrokerError(Exception):
    pass


def parse_url(url):
    """(host, port, username, password, secure) of mqtt://user:pass@host:port
    (mqtts://: TLS, port 8883 unless given)."""
    u = urllib.parse.urlsplit(url if "://" in url else "mqtt://" + url)
    if u.scheme not in ("mqtt", "tcp", "mqtts"):
        raise BrokerError("MQTT url must be mqtt://host:port or mqtts://host:port, not %s" % url)
    secure = u.scheme == "mqtts"
    return (u.hostname or DEFAULT_HOST, u.port or (DEFAULT_TLS_PORT if secure else DEFAULT_PORT),
            u.username, u.password, secure)


def listening(host, port, timeout=0.2):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class Broker:
    def __init__(self, url=None, port=None, credentials=None, admin_user=None, admin_password=None,
                 allow_open=False, tls=None, ca_file=None, link_port=None):
        """credentials: a loaded credentials.Credentials (the server's own
        login and the admin's on the broker started here); admin_user and
        admin_password: the dynamic security admin (default for the broker
        started here: "xiaozhi-admin", its password derived from the secret).
        tls: {"cert", "key", "host", "port"} for its TLS listener, or None.
        ca_file: what a configured mqtts:// broker's certificate is checked
        against (None: the system's CAs)."""
        self.configured = bool(url)
        self.tls = tls if tls and tls.get("cert") and not url else None
        self.host, self.port, self.username, self.password, self.secure = parse_url(
            url or "mqtt://%s:%d" % (DEFAULT_HOST, port or DEFAULT_PORT))
        self.ca_file = ca_file
        self.credentials = credentials
        self.allow_open = allow_open
        self.admin_user = admin_user or DEFAULT_ADMIN_USER
        self.admin_password = admin_password
        self.admin_password_configured = bool(admin_password)
        if not self.configured and credentials is not None:
            from .credentials import SERVER_USER
            self.username, self.password = SERVER_USER, credentials.server_password()
            self.admin_password = admin_password or credentials.admin_password()
        self._proc = None
        self._dir = None
        self.log_path = None
        self.link_port = link_port or None      # the server's own loopback port on the broker started here
        self.on_takeover = None     # fn(device_id): a session takeover the broker logged
        self.takeovers = 0
        self._log_at = 0            # how far the log has been read
        self._reader = None
        self._dynsec = None

    @property
    def url(self):
        return "%s://%s:%d" % ("mqtts" if self.secure else "mqtt", self.host, self.port)

    def device_url(self, host):
        """The broker as a device at `host` reaches it: mqtts:// on the TLS
        listener when there is one (or on a configured mqtts:// broker)."""
        if self.tls is not None:
            return "mqtts://%s:%d" % (host, self.tls["port"])
        return "%s://%s:%d" % ("mqtts" if self.secure else "mqtt", host, self.port)

    def link_tls_context(self):
        """The server's own link to a configured mqtts:// broker: the broker's
        certificate checked (ca_file, else the system's CAs); None for plain."""
        if not (self.configured and self.secure):
            return None
        import ssl
        return ssl.create_default_context(cafile=self.ca_file or None)

    def listeners(self):
        """(url, secure, bind address) of each listener of the broker started here."""
        out = [(self.url, False, self.host)]
        if self.link_port is not None:
            out.append(("mqtt://127.0.0.1:%d (the server's own link)" % self.link_port, False, "127.0.0.1"))
        if self.tls is not None:
            out.append(("mqtts://%s:%d" % (self.tls["host"], self.tls["port"]), True, self.tls["host"]))
        return out

    def _tls_bind(self):
        """The TLS listener's address, or "" for every interface."""
        host = self.tls["host"]
        return "" if host in ("0.0.0.0", "", "::", "[::]") else host.strip("[]")

    def _tls_reachable(self):
        return self.tls is None or listening(self._tls_bind() or "127.0.0.1", self.tls["port"])

    def server_address(self):
        """(host, port, transport) the server's own link connects to: its own
        loopback port on the broker started here, else the broker's port."""
        if self.started_here and self.link_port is not None:
            return "127.0.0.1", self.link_port, "tcp"
        return self.host, self.port, "tcp"

    @property
    def started_here(self):
        return self._proc is not None

    @property
    def dynsec(self):
        """The broker's device logins (dynsec.DynSec), or None when this server
        cannot manage them (a broker it did not start, without an admin login)."""
        if self._dynsec is None and self.admin_password and (self.started_here or self.configured):
            self._dynsec = dynsec.DynSec(self.host, self.port, self.admin_user, self.admin_password)
        return self._dynsec

    @property
    def authenticated(self):
        """True when this broker keeps our device logins and their ACLs."""
        return self.dynsec is not None

    async def start(self):
        if not self.configured:
            await self._start_here()
        await self.check_refuses_strangers()
        return self

    async def _start_here(self):
        if listening(self.host, self.port):
            log.warning("MQTT: something already listens on %s:%d; using it, but this server did not start it, "
                        "so it cannot give devices logins there (stop it, or set mqtt.port)",
                        self.host, self.port)
            return self
        exe = shutil.which("mosquitto") or ("/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else None)
        if exe is None:
            raise BrokerError("no MQTT broker: install Debian's mosquitto (make setup does) or set MQTT_URL")
        self._dir = tempfile.mkdtemp(prefix="xiaozhi-mqtt-")
        conf = os.path.join(self._dir, "mosquitto.conf")
        self.log_path = os.path.join(self._dir, "mosquitto.log")
        with open(conf, "w") as f:
            # Its log goes to a file (warnings and errors: a dropped message is a
            # warning), not to a pipe nobody reads once it runs: a full pipe would
            # stop the broker. Config errors still come on stderr, read below.
            # notice: connects and takeovers; information: "Reloading config.".
            # max_packet_size: a client sending more is disconnected before the
            # server reads a byte of it (no request or report is that big).
            f.write("persistence false\nlog_dest file %s\nlog_type error\nlog_type warning\n"
                    "log_type notice\nlog_type information\nmax_packet_size %d\n" % (self.log_path, MAX_PACKET_BYTES))
            if self.credentials is None:
                f.write("listener %d %s\nallow_anonymous true\n" % (self.port, self.host))
                if self.tls is not None:
                    # As whoever runs the server: mosquitto started by root would
                    # switch to its own user and could not read the key.
                    f.write("user %s\n%sallow_anonymous true\n"
                            % (pwd.getpwuid(os.getuid()).pw_name, self._tls_listener()))
            else:
                f.write(self._authenticated_listeners())
        # Now and then (a few starts in a hundred on a busy machine) a mosquitto
        # 2.0.11 given this config sits in its loop without ever listening:
        # such a start is ended and made again.
        for attempt in range(START_ATTEMPTS):
            self._proc = await asyncio.create_subprocess_exec(
                *_ending_with_us(exe), "-c", conf, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE)
            for _ in range(150):
                if listening(self.host, self.port) and self._tls_reachable() and \
                        (self.link_port is None or listening("127.0.0.1", self.link_port)):
                    log.info("started mosquitto on %s:%d", self.host, self.port)
                    self._reader = asyncio.create_task(self._follow_log(), name="mosquitto-log")
                    return self
                if self._proc.returncode is not None:
                    break
                await asyncio.sleep(0.02)
            if self._proc.returncode is not None:
                break       # it said why: no use trying again
            log.warning("mosquitto did not listen within 3 s: starting it again")
            self._proc.kill()
            await self._proc.wait()
        err = (await self._proc.stderr.read()).decode(errors="replace").strip()
        try:
            with open(self.log_path, errors="replace") as f:
                err = (err + " " + f.read()[-2000:]).strip()
        except OSError:
            pass
        await self.stop()
        raise BrokerError("mosquitto did not start on %s:%d %s" % (self.host, self.port, err))

    def _authenticated_listeners(self):
        """The logins are the dynamic security plugin's, loaded once for every
        listener (per_listener_settings false: loaded per listener, each
        listener would hold its own copy of the logins and only the one the
        admin reaches would learn a new device). The port devices use, and
        the TLS one, bind each client id to the login; the server's own link
        comes in on a loopback port of its own that keeps the client id it
        sends (each node's MQTT session is its own), so whoever logs in with
        the server's login on the devices' port takes a session of that
        name, not a link's."""
        from .credentials import SERVER_USER
        if self.link_port is None:      # kept across a stop, so the link finds it again
            self.link_port = _free_loopback_port()
        try:
            plugin = dynsec.plugin_path()
            dynsec.prepare_file(self.credentials.dynsec_path, self.admin_user, self.admin_password,
                                SERVER_USER, self.credentials.server_password())
        except dynsec.DynSecError as e:
            raise BrokerError(str(e))
        logins = "plugin %s\nplugin_opt_config_file %s\n" % (plugin, os.path.abspath(self.credentials.dynsec_path))
        # Started by root, mosquitto would switch to its own user and lose
        # the 0600 files: it runs as whoever runs the server.
        return ("user %s\nper_listener_settings false\nallow_anonymous false\n%s"
                "listener %d %s\nuse_username_as_clientid true\n"
                "listener %d 127.0.0.1\n%s"
                % (pwd.getpwuid(os.getuid()).pw_name, logins, self.port, self.host, self.link_port,
                   self._tls_listener() + "use_username_as_clientid true\n" if self.tls is not None else ""))

    def _tls_listener(self):
        """The TLS listener's lines (TLS 1.2 at least); its auth settings follow."""
        bind = self._tls_bind()
        return ("listener %d%s\ncertfile %s\nkeyfile %s\ntls_version tlsv1.2\n"
                % (self.tls["port"], " " + bind if bind else "", os.path.abspath(self.tls["cert"]),
                   os.path.abspath(self.tls["key"])))

    async def check_refuses_strangers(self):
        """Connect anonymously and with a wrong password: a broker that takes
        either would let anyone read and send commands, so the server does
        not start on it (unless mqtt.allow_open_broker). A broker that cannot
        be reached is left to the link's reconnects."""
        wrong = "wrong-" + os.urandom(9).hex()
        for what, user, password in (("an anonymous client", None, None),
                                     ("a wrong password", self.username or "xiaozhi-check", wrong)):
            try:
                async with aiomqtt.Client(self.host, self.port, username=user, password=password,
                                          identifier="xiaozhi-check-" + os.urandom(4).hex(), timeout=5):
                    accepted = True
            except aiomqtt.MqttCodeError:
                accepted = False
            except (aiomqtt.MqttError, OSError) as e:
                log.warning("MQTT: could not check that the broker at %s:%d refuses strangers: %s",
                            self.host, self.port, e)
                return
            if not accepted:
                continue
            if self.allow_open:
                log.warning("MQTT: the broker at %s:%d accepts %s: anyone who reaches it can read and send "
                            "commands (allowed by mqtt.allow_open_broker)", self.host, self.port, what)
                return
            await self.stop()
            raise BrokerError("the MQTT broker at %s:%d accepts %s, so anyone who reaches it could read the "
                              "children's devices and send them commands: configure it to refuse anonymous "
                              "clients and check passwords (mosquitto: allow_anonymous false and its dynamic "
                              "security plugin), or set mqtt.allow_open_broker: true for a broker that must "
                              "stay open" % (self.host, self.port, what))

    # ---- its log ----

    async def _follow_log(self):
        while True:
            await asyncio.sleep(LOG_POLL_S)
            try:
                self._read_log()
            except Exception:
                log.exception("reading the broker's log failed")

    def _read_log(self):
        """Handle the log lines written since the last read; True when a line
        was cut short (the rest is still being written)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_at)
                data = f.read()
                end = data.rfind(b"\n") + 1
                self._log_at += end
                if self._log_at > LOG_KEEP_BYTES:
                    # Read to here: start the file again (mosquitto appends, so
                    # its next line lands at the start).
                    os.truncate(self.log_path, 0)
                    self._log_at = 0
        except OSError:
            return False
        for line in data[:end].decode("utf-8", "replace").splitlines():
            m = _TAKEOVER.search(line)
            if m is not None:
                self.takeovers += 1
                device = device_of_user(m.group(1))
                if device is not None and self.on_takeover is not None:
                    self.on_takeover(device)
        return end < len(data)

    async def stop(self):
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None
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
