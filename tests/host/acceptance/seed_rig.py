"""The seed plan's flows as a family sees them: one server run as a family
runs it (its own mosquitto, a control store on SQLite or PostgreSQL, two
worker processes, conversation keep, a household, limits set), the
scripted model, and boards as real firmware processes on the simulated
board. What a test reads is what a child hears and sees (the board's
spoken lines, its tasks and player) and what a parent gets (acks).

    rig = await start_seed()                 # the server; boards come later
    board = rig.board("02:00:00:00:a0:01")   # one device id, its own state dir
    fw = await board.boot()                  # fresh state the first time
    await board.opener(fw)                   # the chat opener, spoken first
    status, body = await rig.start_task(board, LESSON)   # the parents' API, with its ack

Boards with different device ids share nothing but the server, so tests
run them side by side.
"""
import asyncio
import os
import signal

from testkit.control_api import Api, eventually
from testkit.firmware_process import FirmwareProcess, prepare_state
from testkit.node import start_node

OPENER = "你好呀，我们聊聊吧！"
LESSONS = ("lesson1.mp3", "lesson2.mp3")
REPLY = "好的，我们聊天吧。"


def assistant_lines(fw, since=0):
    return [e["text"] for e in fw.find("subtitle", role="assistant", since=since)]


def before(fw, event, **fields):
    """The board's events before the first matching one."""
    i = fw.log.index(event, **fields)
    assert i is not None, "no %s %r" % (event, fields)
    return fw.events[:i]


class Board:
    """One device id and its state directory (NVS, RTC, SD card) kept
    between boots, as a real board keeps its flash and battery."""

    def __init__(self, rig, device_id, state_dir):
        self.rig = rig
        self.device_id = device_id
        self.state_dir = state_dir
        self.procs = []

    async def boot(self, speed=4, args=(), **config):
        await self.provision(speed, **config)
        fw = await FirmwareProcess.start("cpython", self.state_dir, args)
        self.procs.append(fw)
        return fw

    async def provision(self, speed=4, **config):
        """The board's first set-up (its state dir, its broker login from the
        parents' provisioning); later calls change nothing."""
        if not (self.state_dir / "config.json").exists():
            server = self.rig.server
            creds = (await server.control.devices.provision(self.device_id))["mqtt"]
            cfg = {"server_url": server.ws.url,
                   "ota_url": "http://127.0.0.1:%d/xiaozhi/ota/" % server.http.port,
                   "clock_speed": speed,
                   "mqtt": {"url": "mqtt://127.0.0.1:%d" % server.broker.port, "keepalive": 30,
                            "user": creds["username"], "password": creds["password"]}}
            cfg.update(config)
            prepare_state(self.state_dir, cfg, LESSONS)
            (self.state_dir / "mac").write_text(self.device_id.replace(":", ""))

    async def opener(self, fw, since=0, timeout=30):
        """The chat opener heard (spoken first), then the board listens."""
        said = await fw.wait_event("subtitle", role="assistant", since=since, timeout=timeout)
        assert said["text"] == OPENER, said
        await fw.wait_event("state", state="listening", since=fw.events.index(said), timeout=timeout)
        return said

    async def ready(self, fw, timeout=30):
        """Booted, the opener heard, the MQTT channel up (parents' commands reach it)."""
        await fw.wait_event("boot", timeout=timeout)
        await fw.wait_event("mqtt", action="CONNECT", timeout=timeout)
        await self.opener(fw, timeout=timeout)
        # The server knows the board's tools (the opener came after them).

    async def say(self, fw, text):
        """The child speaks into the board's mic (the server's own voices
        synthesize it, the board sends it as Opus like any speech)."""
        from simkit import mic_input
        self._said = getattr(self, "_said", 0) + 1
        out = self.state_dir / "mic" / ("%04d" % self._said)
        await asyncio.to_thread(mic_input.speak_to_frames, text, str(out))
        await fw.send("mic " + str(out))

    async def device_time(self, fw):
        mark = fw.mark()
        await fw.send("warp 0")
        return (await fw.wait_event("warp", since=mark))["time"]

    async def close(self):
        for fw in self.procs:
            await fw.close()


class SeedRig:
    def __init__(self, cfg, http, tmp_path, llm):
        self.cfg = cfg
        self.http = http
        self.server = self.api = None
        self.tmp_path = tmp_path
        self.llm = llm
        self.boards = []

    async def start_server(self):
        server = await start_node(self.cfg, with_broker=True)
        self.server, self.api = server, Api(server, self.http)
        return server

    async def stop_server(self):
        server, self.server = self.server, None
        if server is not None:
            await server.stop()

    async def kill_worker_of(self, device_id):
        """kill -9 of the worker process that holds the device's session, as
        a node dies: the board reconnects to the other worker (or the one
        started again), which has only what the store kept."""
        pool = self.server.pool
        wid = await eventually(lambda: (pool._holders.get(device_id) or (None,))[0], 10)
        os.kill(pool.pids()[wid], signal.SIGKILL)
        return wid

    def board(self, device_id):
        b = Board(self, device_id, self.tmp_path / ("board-" + device_id.replace(":", "")))
        self.boards.append(b)
        return b

    async def start_task(self, board, body, wait=15):
        return await self.api.post("/api/devices/%s/tasks" % board.device_id, body, wait=wait)

    async def add_schedule(self, board, body, wait=15):
        return await self.api.post("/api/devices/%s/schedules" % board.device_id, body, wait=wait)

    async def family(self, *boards):
        """A household of these boards, with limits set that allow talking now."""
        status, body = await self.api.call("PUT", "/api/households/home-%s" % boards[0].device_id.replace(":", ""),
                                           {"devices": [b.device_id for b in boards]})
        assert status == 200, body
        for b in boards:
            status, body = await self.api.call("PUT", "/api/devices/%s/limits" % b.device_id,
                                               {"daily_talk_minutes": 600})
            assert status == 200, body

    async def kept(self, device_id):
        """The device's conversation as the store keeps it (the main process's own connection)."""
        return await self.server.control.store.conversations.load_conversation(device_id, 3600)

    async def close(self):
        for b in self.boards:
            await b.close()
