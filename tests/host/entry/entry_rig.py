"""One board, one server, one broker: what the entry tests drive.

    fw = await rig.boot("cpython")                 # fresh state the first time
    await rig.chatting(fw)                         # connected, server in chat
    status, body = await rig.start_task(REPEATER)  # the parents' API, waits for the ack
    ack = await rig.mqtt.publish_raw(b"not json")  # a raw request on cmd/task
    rig.active()                                   # the server's active app.task

The board keeps its state directory between boots (NVS, RTC, SD), like a
real one keeps its flash and battery.
"""
import asyncio
import json
import time

import aiomqtt
import pytest

from testkit.firmware_process import FirmwareProcess, prepare_state
from testkit import MICROPYTHON_BUILD, ROOT
from testkit.control_api import eventually
from xiaozhi_server import protocol as proto

DEVICE_ID = "02:00:00:00:e0:01"
LESSONS = ("lesson1.mp3", "lesson2.mp3")
OPENER = "你好呀，我们聊聊吧！"

# With a broker configured the 64-bit unix port needs about 242 KB of heap
# right after boot (docs/entry.md, "Memory"): more than its 256 KB budget
# leaves for a connection. The 32-bit build (make micropython), the board's
# word size, runs it in the same 256 KB.
UNIX_PORT = pytest.param("micropython", marks=pytest.mark.skipif(
    not MICROPYTHON_BUILD.exists(),
    reason="the MQTT side needs the 32-bit build (make micropython) to fit 256 KB"))


class RawMqtt:
    """The parents' side without the server: raw payloads on cmd/task, acks from rpt/ack
    (logged in as the server: the broker's ACL lets nobody else write to cmd/#)."""

    def __init__(self, port, device_id, username=None, password=None):
        self.port = port
        self.device_id = device_id
        self.username, self.password = username, password
        self.acks = []
        self.states = []
        self._client = None
        self._task = None
        self._seq = 0

    async def open(self):
        self._client = aiomqtt.Client("127.0.0.1", self.port, identifier="parents-test",
                                      username=self.username, password=self.password)
        await self._client.__aenter__()
        await self._client.subscribe(proto.topic(proto.TOPIC_RPT_ACK, self.device_id), qos=1)
        await self._client.subscribe(proto.topic(proto.TOPIC_RPT_STATE, self.device_id), qos=1)
        self._task = asyncio.create_task(self._read())

    async def _read(self):
        async for m in self._client.messages:
            body = json.loads(m.payload)
            (self.acks if str(m.topic).endswith("rpt/ack") else self.states).append(body)

    async def close(self):
        if self._task is not None:
            self._task.cancel()
            await self._client.__aexit__(None, None, None)

    def req_id(self):
        self._seq += 1
        return "raw-%d-%d" % (self._seq, int(time.time() * 1000))

    def request(self, action, payload, req_id=None):
        """A request built like the parents' app builds one (header first)."""
        return {"header": {"req_id": req_id or self.req_id(), "device_id": self.device_id,
                           "timestamp": int(time.time())},
                "action": action, "payload": payload}

    async def publish_raw(self, data, topic=proto.TOPIC_CMD_TASK, retain=False):
        await self._client.publish(proto.topic(topic, self.device_id), data, qos=1, retain=retain)

    async def ack_for(self, req_id, timeout=10):
        return await eventually(lambda: next((a for a in self.acks if a["req_id"] == req_id), None),
                                timeout)


class Rig:
    def __init__(self, server, api, state_dir):
        self.server = server
        self.api = api
        self.broker = server.broker   # started by the server: device credentials and ACL checked
        self.state_dir = state_dir
        self.mqtt = None
        self.procs = []

    @property
    def ota_url(self):
        return "http://127.0.0.1:%d/xiaozhi/ota/" % self.server.http.port

    async def boot(self, interp, speed=4, args=(), provision=True, **config):
        """Start the board and return its process. The first boot prepares the
        state directory (config with `speed` and `config`; the broker login of a
        parent's provisioning unless provision=False); later boots keep it."""
        if not (self.state_dir / "config.json").exists():
            mqtt = {"url": "mqtt://127.0.0.1:%d" % self.broker.port, "keepalive": 30}
            if provision:   # the loopback default hands out nothing over OTA
                creds = (await self.server.control.devices.provision(DEVICE_ID))["mqtt"]
                mqtt.update(user=creds["username"], password=creds["password"])
            cfg = {"server_url": self.server.ws.url, "ota_url": self.ota_url, "clock_speed": speed,
                   "mqtt": mqtt}
            cfg.update(config)
            prepare_state(self.state_dir, cfg, LESSONS)
            (self.state_dir / "mac").write_text(DEVICE_ID.replace(":", ""))
        if self.mqtt is None:
            self.mqtt = RawMqtt(self.broker.port, DEVICE_ID, self.broker.username, self.broker.password)
            await self.mqtt.open()
        fw = await FirmwareProcess.start(interp, self.state_dir, args)
        self.procs.append(fw)
        return fw

    def session(self):
        for s in self.server.services.sessions:
            if s.device_id == DEVICE_ID and not s.closed:
                return s
        return None

    def active(self):
        s = self.session()
        return s.runtime.active if s is not None and s.runtime is not None else None

    async def server_in(self, key, timeout=15):
        await eventually(lambda: self.active() == key, timeout)

    async def chatting(self, fw, timeout=20):
        """Booted, connected, and the server holds the device in chat."""
        await fw.wait_event("boot", timeout=timeout)
        await fw.wait_event("mqtt", timeout=timeout, action="CONNECT")
        await self.server_in("chat.conversation", timeout)
        await eventually(lambda: self.session().mcp.ready.is_set(), timeout)

    async def start_task(self, body, wait=10):
        return await self.api.post("/api/devices/%s/tasks" % DEVICE_ID, body, wait=wait)

    async def add_schedule(self, body, wait=10):
        return await self.api.post("/api/devices/%s/schedules" % DEVICE_ID, body, wait=wait)

    def pending(self):
        """The pending_task record in the board's NVS, read by the firmware's own store."""
        return read_record(self.state_dir, "pending")

    async def close(self):
        for fw in self.procs:
            await fw.close()
        if self.mqtt is not None:
            await self.mqtt.close()


_READ = """
import json, sys
from hal.host.nvs import NVSFlash
import nvs_store
rec = nvs_store.RecordStore(NVSFlash(sys.argv[1] + "/nvs.json").open("xiaozhi")).get(sys.argv[2])
print(json.dumps(rec))
"""


def read_record(state_dir, name):
    """A record from the board's NVS as the firmware reads it (a separate
    CPython process with the firmware's path: its modules stay out of ours)."""
    import subprocess
    import sys
    from testkit import firmware_env
    out = subprocess.run([sys.executable, "-c", _READ, str(state_dir), name], cwd=ROOT,
                         env=firmware_env(), capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


_WRITE = """
import json, sys
from hal.host.nvs import NVSFlash
import nvs_store
flash = NVSFlash(sys.argv[1] + "/nvs.json")
nvs_store.RecordStore(flash.open("xiaozhi")).put(sys.argv[2], json.loads(sys.argv[3]))
"""


def write_record(state_dir, name, rec):
    """Put a record into the board's NVS with the firmware's own store, as
    an earlier run would have left it (the board is off meanwhile)."""
    import subprocess
    import sys
    from testkit import firmware_env
    subprocess.run([sys.executable, "-c", _WRITE, str(state_dir), name, json.dumps(rec)], cwd=ROOT,
                   env=firmware_env(), capture_output=True, text=True, check=True)
