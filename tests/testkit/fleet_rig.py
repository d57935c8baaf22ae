"""A fleet on a private network (testkit/netns.py): PostgreSQL, mosquitto and
N server nodes each on its own host, devices (the real firmware on the host
HAL) on theirs, and the test itself on a "parents" host.

    rig = FleetRig.start(nodes=3)          # every node registered and serving
    fw = await rig.device("d1")            # booted, asked OTA, connected to a node
    text = await rig.ask(fw, "hello")      # the words it heard back ("I am n2. ...")
    rig.kill("n2"); rig.start_node("n2")   # kill -9, and a new process on the same host
    rig.net.set_link("n2", up=False)       # a partition
    rig.close()

Every node is `xiaozhi-server run` as docs/deploy.md says: the same
config file, and only XIAOZHI_DB_URL, MQTT_URL, its ports and
XIAOZHI_PUBLIC_HOST set apart (plus the cloud LLM's address: a fake
OpenAI-compatible server on each node's host, answering "I am <node>.").
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from testkit import ROOT, firmware_env, tool
from testkit.consoles import PipeConsole
from testkit.fake_llm import FakeLLM
from testkit.firmware_process import command, prepare_state
from testkit.netns import Network
from testkit.postgres import Postgres

WS_PORT, HTTP_PORT, MQTT_PORT, PG_PORT = 8000, 8003, 1883, 5432
# What every node reads: light voices (espeak), one process, fleet timings as shipped.
API_TOKEN = "fleet-parents-token"
NODE_CONFIG = """
tts: {type: espeak, voice: en-us}
session: {language: en}
control: {api_token: %s}
mqtt: {allow_open_broker: true}
""" % API_TOKEN
API_HEADERS = {"Authorization": "Bearer " + API_TOKEN}


class FleetRig:
    def __init__(self, net, workdir):
        self.net = net
        self.dir = workdir
        self.pg = None
        self.broker = None
        self.llms = {}
        self.nodes = {}         # name -> Popen
        self._log_from = {}     # name -> where the running process's log lines begin
        self.node_ips = {}
        self.db_url = None

    # ---- bringing it up ----

    @classmethod
    def start(cls, nodes=3):
        net = Network.create()
        rig = cls(net, tempfile.mkdtemp(prefix="test-fleet-"))
        try:
            rig._start_db_and_broker()
            with open(os.path.join(rig.dir, "server.yaml"), "w") as f:
                f.write(NODE_CONFIG)
            names = ["n%d" % (i + 1) for i in range(nodes)]
            for name in names:
                rig.node_ips[name] = net.add_host(name)
            net.add_host("parents")
            for name in names:
                rig.start_node(name, wait=False)
            for name in names:
                rig.wait_node(name)
        except BaseException:
            rig.close()
            raise
        return rig

    def _start_db_and_broker(self):
        db_ip = self.net.add_host("db")
        self.pg = Postgres(listen=db_ip, port=PG_PORT, netns=self.net.ns("db")).start()
        self.db_url = self.pg.new_schema_url(host=db_ip)
        mq_ip = self.net.add_host("mq")
        conf = os.path.join(self.dir, "mosquitto.conf")
        with open(conf, "w") as f:
            f.write("listener %d 0.0.0.0\nallow_anonymous true\npersistence true\npersistence_location %s/\n"
                    % (MQTT_PORT, self.dir))
        self.broker_conf = conf
        self.broker_ip = mq_ip
        self.start_broker()

    def start_broker(self):
        exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self.broker = self.net.popen("mq", [exe, "-c", self.broker_conf], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self._wait_port("parents" if "parents" in self.net.hosts else "mq", self.broker_ip, MQTT_PORT)

    def stop_broker(self):
        self.broker.send_signal(signal.SIGTERM)     # it saves its sessions (persistence)
        self.broker.wait(10)

    @property
    def mqtt_url(self):
        return "mqtt://%s:%d" % (self.broker_ip, MQTT_PORT)

    def _wait_port(self, host, ip, port, timeout=30.0):
        import socket
        deadline = time.monotonic() + timeout
        while True:
            with self.net.inside(host):
                try:
                    socket.create_connection((ip, port), timeout=0.5).close()
                    return
                except OSError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError("nothing listens on %s:%d after %.0f s" % (ip, port, timeout))
            time.sleep(0.1)

    def start_node(self, name, wait=True):
        """`xiaozhi-server run` on the node's host (a new process, a new node id)."""
        if name not in self.llms:
            with self.net.inside(name):
                llm = FakeLLM().start()
            llm.default_reply = "I am %s. Nice to talk with you." % name
            self.llms[name] = llm
        ip = self.node_ips[name]
        home = os.path.join(self.dir, name)
        os.makedirs(home, exist_ok=True)
        env = dict(os.environ, XIAOZHI_DB_URL=self.db_url, MQTT_URL=self.mqtt_url, XIAOZHI_WS_PORT=str(WS_PORT),
                   XIAOZHI_HTTP_PORT=str(HTTP_PORT), XIAOZHI_PUBLIC_HOST=ip, XIAOZHI_HOST="0.0.0.0",
                   XIAOZHI_TLS_ALLOW_PLAIN="1",    # plain on the namespaces' own links
                   XIAOZHI_WORKERS="1", **self.llms[name].env())
        log = open(os.path.join(home, "server.log"), "ab")
        self._log_from[name] = log.tell()      # this process's lines start here
        self.nodes[name] = self.net.popen(
            name, [sys.executable, "-m", "xiaozhi_server", "run", "--config", os.path.join(self.dir, "server.yaml"),
                   "--insecure"], cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        if wait:
            self.wait_node(name)

    def wait_node(self, name, timeout=120.0):
        path = os.path.join(self.dir, name, "server.log")
        deadline = time.monotonic() + timeout
        while True:
            with open(path, errors="replace") as f:
                f.seek(self._log_from[name])
                text = f.read()
            if "xiaozhi-server running" in text:
                return
            if self.nodes[name].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("node %s did not start:\n%s" % (name, text[-3000:]))
            time.sleep(0.1)

    def sql(self, query, args=()):
        """Rows of a query on the nodes' store (through the cluster's unix socket)."""
        import psycopg
        schema = self.db_url.rsplit("%3D", 1)[1]
        with psycopg.connect(self.pg.socket_url + "&options=-csearch_path%3D" + schema, autocommit=True) as c:
            return c.execute(query, args).fetchall()

    def node_name(self, node_id):
        """n2 of node id "10.77.0.6:8000-1a2b3c" (ids start with the public host)."""
        ip = node_id.split(":", 1)[0]
        return next(name for name, addr in self.node_ips.items() if addr == ip)

    def live_urls(self):
        return {r[0] for r in self.sql(
            "SELECT ws_url FROM nodes WHERE heartbeat_at > EXTRACT(EPOCH FROM clock_timestamp()) - 3 "
            "AND state = 'serving'")}

    def ws_url(self, name):
        return "ws://%s:%d/xiaozhi/v1/" % (self.node_ips[name], WS_PORT)

    def log(self, name):
        with open(os.path.join(self.dir, name, "server.log"), errors="replace") as f:
            return f.read()

    # ---- what users and operators do ----

    def kill(self, name):
        """kill -9: no goodbye, no drain."""
        self.nodes[name].send_signal(signal.SIGKILL)
        self.nodes[name].wait(10)

    def terminate(self, name):
        """SIGTERM (a service manager's stop): the node drains, then exits."""
        self.nodes[name].send_signal(signal.SIGTERM)

    def ota_urls(self):
        return ["http://%s:%d/xiaozhi/ota/" % (ip, HTTP_PORT) for ip in self.node_ips.values()]

    async def device(self, host, interp=None, mqtt=False, **config):
        """The firmware on its own host, OTA URLs of every node in its config."""
        if host not in self.net.hosts:
            self.net.add_host(host)
        cfg = {"ota_url": self.ota_urls(), "server_url": "ws://%s:%d/xiaozhi/v1/" % (self.net.hosts[host], 1),
               "clock_speed": 1, "connect_at_boot": False}
        if mqtt:
            cfg["mqtt"] = {"url": self.mqtt_url}
        cfg.update(config)
        state = prepare_state(os.path.join(self.dir, "dev-" + host), cfg)
        interp = interp or ("micropython" if _micropython() else "cpython")
        argv = self.net.command(host, [*command(interp), "firmware/main.py", "--state", str(state), "--json"])
        fw = await PipeConsole.start(argv, env=firmware_env(), name="device on %s (%s)" % (host, interp))
        self.net.track(fw.proc)
        await fw.wait_event("state", state="idle", timeout=60)
        return fw

    async def ask(self, fw, words, timeout=30):
        """Wake the device with these words (stock servers take `listen detect`
        text that is no wake word as what the child said); the reply's first
        sentence as the device shows it."""
        mark = fw.mark()
        await fw.send("wake " + words)
        ev = await fw.wait_event("subtitle", timeout=timeout, since=mark, role="assistant")
        return ev["text"]

    def close(self):
        for llm in self.llms.values():
            llm.stop()
        self.net.close()
        if self.pg is not None:
            self.pg.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _micropython():
    try:
        tool("micropython")
        return True
    except Exception:
        return False


def node_of(text):
    """n2 of "I am n2. Nice to ..."."""
    return text.split("I am ", 1)[1].split(".", 1)[0] if "I am " in text else None
