"""Two worker processes share the WebSocket port (issue 15): `xiaozhi-server
run --workers 2` as a person starts it, real sessions, the fake LLM, the
test mosquitto. Sessions land on both workers and chat on each; the control
plane is one (one MQTT client); a killed worker is started again and takes
new sessions; the primary's end, clean or not, leaves no process behind."""
import asyncio
import json
import os
import re
import signal
import sys

import aiohttp
import pytest

import testkit
from testkit.child_procs import children, wait_gone
from testkit.control_api import eventually
from testkit.mosquitto import Mosquitto
from testkit.mqtt_device import MqttDevice
from testkit.wire_device import WireDevice
from xiaozhi_server.transport.device_sessions import REPLACED

START_S = 240           # two workers loading their models on a busy machine
ANSWER = "🙂 The sky is blue because of the air."
TOKEN = "workers-test-token"
LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3"}}


@pytest.fixture
def broker():
    b = Mosquitto().start()
    yield b
    b.close()


class Primary:
    """`xiaozhi-server run --workers 2` in a subprocess; its URLs from what it prints."""

    def __init__(self, proc, log_path):
        self.proc = proc
        self.log_path = log_path
        self.urls = {}
        self.banner = {}

    async def started(self):
        while "config" not in self.urls:
            line = await asyncio.wait_for(self.proc.stdout.readline(), START_S)
            if not line:
                raise AssertionError("the server ended before it ran:\n" + self.log())
            key, _, value = line.decode().partition(":")
            self.urls[key.strip()] = value.strip().split(" ")[0]
            self.banner[key.strip()] = value.strip()
        return self

    def log(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    @property
    def ws_url(self):
        return self.urls["WebSocket"]

    def url(self, path):
        return self.urls["OTA"].replace("/xiaozhi/ota/", path)

    async def health(self):
        async with aiohttp.ClientSession() as s:
            async with s.get(self.url("/health")) as r:
                return await r.json()

    async def provision(self, device_id):
        """A parent provisions a device through the primary's API: its credentials."""
        async with aiohttp.ClientSession() as s:
            async with s.post(self.url("/api/devices/%s/credentials" % device_id)) as r:
                assert r.status == 200, await r.text()
                return await r.json()

    def workers(self):
        """{pid: cmdline} of the worker processes."""
        return children(self.proc.pid, match="xiaozhi_server.shard.worker")

    def tree(self):
        """Every process below the primary (workers and their MCP processes)."""
        pids = set(children(self.proc.pid))
        for pid in list(pids):
            pids |= set(children(pid))
        return pids


@pytest.fixture
async def primary(tmp_path, broker, fake_llm):
    fake_llm.default_reply = ANSWER
    p = await start_primary(tmp_path, broker, fake_llm)
    try:
        yield p
    finally:
        if p.proc.returncode is None:
            p.proc.kill()
            await p.proc.wait()


async def start_primary(tmp_path, broker, fake_llm, log_name="server.log"):
    """`xiaozhi-server run --workers 2` on its config, database and secret in tmp_path."""
    cfg = {
        "server": {"host": "127.0.0.1", "ws_port": 0, "http_port": 0},
        "mqtt": {"url": broker.url, "allow_open_broker": True},
        "control": {"db_path": str(tmp_path / "control.db")},
        "llm": {"type": "openai", "base_url": fake_llm.base_url, "api_key": "test", "model": "fake-model"},
        "tts": {"type": "espeak", "voice": "en-us"},
        "session": {"language": "en"},
        "auth": {"tokens": [TOKEN]},
    }
    path = tmp_path / "server.yaml"
    path.write_text(json.dumps(cfg))     # JSON is YAML
    log_path = tmp_path / log_name
    env = dict(os.environ, PYTHONPATH=str(testkit.ROOT / "server"))
    with open(log_path, "wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "xiaozhi_server", "run", "--config", str(path), "--workers", "2",
            cwd=tmp_path, env=env, stdout=asyncio.subprocess.PIPE, stderr=log)
    p = Primary(proc, log_path)
    try:
        return await p.started()
    except BaseException:
        proc.kill()
        await proc.wait()
        raise


async def chat_on_each(devices):
    """One turn by text (listen detect) on every session: the fake LLM's answer comes back spoken."""
    await asyncio.gather(*[dev.detect("why is the sky blue") for dev in devices])
    for dev in devices:
        await dev.wait_for(lambda d=dev: [x for x in d.texts() if "sky is blue" in x], timeout=60)


async def sessions_on_every_worker(p, devices, start_index, most=48):
    """Open sessions until /health shows each worker holding some; the new ones."""
    opened = []
    for i in range(start_index, start_index + most):
        dev = WireDevice(p.ws_url, device_id="aa:bb:cc:00:%02x:%02x" % divmod(i, 256), token=TOKEN, mcp=False)
        await dev.connect()
        await dev.hello(timeout=60)
        devices.append(dev)
        opened.append(dev)
        if len(opened) % 4 == 0 and all(await eventually(lambda: _counts(p, len(devices)), timeout=30)):
            return opened
    raise AssertionError("%d sessions, all on one worker: %s" % (len(opened), await p.health()))


def worker_pid(p, number):
    """The pid of worker `number` (1, 2, ...), from the primary's "worker N ready (pid P)" line."""
    found = re.findall(r"worker %d ready \(pid (\d+)\)" % number, p.log())
    assert found, "worker %d never said it was ready" % number
    return int(found[-1])


async def _counts(p, expected):
    """Sessions per worker, once the workers have reported all `expected` of them."""
    body = await p.health()
    return body["workers"] if body["sessions"] == expected else None


async def test_sessions_spread_over_two_workers_and_a_killed_one_comes_back(primary, broker, fake_llm):
    p = primary
    assert len(p.workers()) == 2
    # The banner says where the parents' console is and what listens and speaks.
    assert p.urls["console"] == p.url("/console/")
    assert p.banner["voice"].startswith("ASR ") and "TTS espeak/en-us" in p.banner["voice"]
    log = p.log()
    assert "w1 xiaozhi_server.shard.worker: worker 1 serving" in log
    assert "w2 xiaozhi_server.shard.worker: worker 2 serving" in log

    devices = []
    try:
        opened = await sessions_on_every_worker(p, devices, 0)
        await chat_on_each(opened)          # both workers answer, through the fake LLM
        assert len(fake_llm.requests) >= len(opened)

        # The control plane is one: one MQTT client, whatever the number of workers.
        assert len(await eventually(broker.connected_clients, timeout=30)) == 1

        # Kill one worker: the pool starts it again, and new sessions land on both and chat.
        victim = min(p.workers())
        os.kill(victim, signal.SIGKILL)
        assert await asyncio.to_thread(wait_gone, victim, 30)
        await eventually(lambda: "was killed by signal 9; starting it again" in p.log(), timeout=30)
        await eventually(lambda: p.log().count(" ready (pid ") == 3, timeout=START_S)
        assert len(p.workers()) == 2 and victim not in p.workers()
        for dev in devices:
            await dev.close()
        devices.clear()
        await eventually(lambda: _counts(p, 0), timeout=30)
        await chat_on_each(await sessions_on_every_worker(p, devices, 100))
        assert len(broker.connected_clients()) == 1
    finally:
        for dev in devices:
            await dev.close()

    # SIGTERM stops everything cleanly: the primary exits 0 and nothing it started is left.
    tree = p.tree()
    assert len(tree) >= 2
    p.proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(p.proc.wait(), 60) == 0
    for pid in tree:
        assert await asyncio.to_thread(wait_gone, pid, 30), "process %d outlived the server" % pid
    assert "Traceback" not in p.log()


async def test_a_device_token_from_the_primary_opens_a_session_on_any_worker(primary):
    """The primary's API provisions a device; the worker that accepts it checks its own token."""
    creds = await primary.provision("aa:bb:cc:00:99:01")
    served_by, paused = set(), None
    try:
        for _ in range(2):
            async with WireDevice(primary.ws_url, device_id="aa:bb:cc:00:99:01", token=creds["token"], mcp=False) as dev:
                assert (await dev.hello(timeout=60))["session_id"]
                took = (await eventually(lambda: _counts(primary, 1), timeout=30)).index(1)
                served_by.add(took)
            await eventually(lambda: _counts(primary, 0), timeout=30)
            if len(served_by) == 2:
                break
            # Which worker accepts is the kernel's choice (one queue): on a quiet machine one
            # worker took 32 sessions of 32. The one that took it is paused, so the other must.
            paused = worker_pid(primary, took + 1)
            os.kill(paused, signal.SIGSTOP)
    finally:
        if paused is not None:
            os.kill(paused, signal.SIGCONT)
    assert served_by == {0, 1}
    async with WireDevice(primary.ws_url, device_id="aa:bb:cc:00:99:02", token=creds["token"], mcp=False) as other:
        code, reason = await other.wait_closed(timeout=60)
        assert code == 1008 and "wrong token" in reason

    # A second session of the device replaces the first on whichever worker
    # either landed (the routing between workers: test_worker_channel.py).
    for _ in range(3):
        first = WireDevice(primary.ws_url, device_id="aa:bb:cc:00:99:01", token=creds["token"], mcp=False)
        await first.connect()
        await first.hello(timeout=60)
        async with WireDevice(primary.ws_url, device_id="aa:bb:cc:00:99:01", token=creds["token"], mcp=False) as second:
            await second.hello(timeout=60)
            assert await first.wait_closed(timeout=30) == (1000, REPLACED)
            assert second.closed is None
        await first.close()


async def test_workers_end_when_the_primary_is_killed(primary):
    tree = primary.tree()
    assert len(primary.workers()) == 2
    primary.proc.kill()
    await primary.proc.wait()
    for pid in tree:
        assert await asyncio.to_thread(wait_gone, pid, 30), "process %d outlived the killed server" % pid


async def test_killing_a_worker_mid_turn_and_then_the_primary_loses_and_doubles_no_command(
        primary, broker, fake_llm, tmp_path):
    """kill -9 of a worker while sessions are mid-reply and a lesson was just
    started, then of the primary with a schedule still waiting for its ack:
    every command reaches the board once, every ack is recorded once, and the
    schedule waiting at the kill is sent again once by the next primary."""
    async with aiohttp.ClientSession() as http:
        async def api(method, path, body=None, p=primary):
            async with http.request(method, p.url(path), json=body) as r:
                return r.status, await r.json()

        async with MqttDevice(broker.port, "kid-w") as board:
            seen = []
            inner = board.answer

            def answer(req):
                seen.append(req["header"]["req_id"])
                return inner(req) if board_acks else None
            board_acks = True
            board.answer = answer
            status, s1 = await api("POST", "/api/devices/kid-w/schedules?wait=10",
                                   {"time": "07:00", "pending_task": LESSON})
            assert status == 201 and s1["state"] == "active", s1
            status, lesson = await api("POST", "/api/devices/kid-w/tasks?wait=10", LESSON)
            assert status == 200 and lesson["ack"]["ok"], lesson

            devices = []
            try:
                opened = await sessions_on_every_worker(primary, devices, 200)
                fake_llm.reply(ANSWER, first_token_delay=1.0, chunk_delay=0.2)
                for dev in opened:
                    await dev.detect("why is the sky blue")
                os.kill(min(primary.workers()), signal.SIGKILL)        # mid-reply on that worker
                status, during = await api("POST", "/api/devices/kid-w/tasks?wait=10", LESSON)
                assert status == 200 and during["ack"]["ok"], during
                await eventually(lambda: primary.log().count(" ready (pid ") == 3, timeout=START_S)
            finally:
                for dev in devices:
                    await dev.close()

            board_acks = False      # the board is busy: the next schedule waits for its ack
            status, s2 = await api("POST", "/api/devices/kid-w/schedules", {"time": "08:00", "pending_task": LESSON})
            assert status == 201 and s2["state"] == "pending_ack"
            await eventually(lambda: len(seen) == 4, timeout=30)
            primary.proc.kill()
            await primary.proc.wait()
            board_acks = True
            again = await start_primary(tmp_path, broker, fake_llm, "server-2.log")
            try:
                async def settled():
                    _, s = await api("GET", "/api/devices/kid-w/schedules/%s" % s2["alarm_id"], p=again)
                    return s if s["state"] == "active" else None
                await eventually(settled, timeout=60)
                _, d = await api("GET", "/api/devices/kid-w", p=again)
                _, listed = await api("GET", "/api/devices/kid-w/schedules", p=again)
            finally:
                again.proc.kill()
                await again.proc.wait()

    # 4 requests, then s2 once more as the same request (a board that had it runs it once)
    assert len(seen) == 5 and len(set(seen)) == 4 and seen[-1] == seen[-2], seen
    assert sorted(s["alarm_id"] for s in listed["schedules"]) == sorted([s1["alarm_id"], s2["alarm_id"]])
    acked = [r for r in d["recent_requests"] if r["ack"] is not None]
    assert sorted(r["req_id"] for r in acked) == sorted([s1["last_req_id"], lesson["req_id"], during["req_id"],
                                                        seen[-1]])
    assert all(s["state"] == "active" for s in listed["schedules"])
