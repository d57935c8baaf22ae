"""A device that dies in the middle of a long reply (issue 37, item 5):
its session ends (reply cancelled, speech stopped, /health back to 0) and
SIGTERM then stops the server within the drain time plus a few seconds.

The server is `xiaozhi-server run` in a subprocess, as a service manager
runs it; the device is a process of its own that asks for a 30-sentence
story, stops reading once the speech starts (a board that hung) and is
killed with SIGKILL (the kernel closes its socket), or frozen with SIGSTOP
(a board that lost power: nothing tells the server) while SIGTERM comes."""
import asyncio
import json
import os
import signal
import sys

import aiohttp
import pytest

import testkit
from testkit.control_api import eventually
from testkit.mosquitto import free_port

START_S = 240
DRAIN_S = 3.0
STORY = " ".join("Sentence number %d of the very long story about the little dog and the moon." % i
                 for i in range(1, 31))

DEVICE = r"""
import asyncio, sys
from testkit.wire_device import WireDevice

async def main():
    dev = WireDevice(sys.argv[1], mcp=False)
    await dev.connect()
    await dev.hello(timeout=120)
    await dev.detect("tell me a very long story")
    await dev.wait_for(lambda: dev.audio, timeout=120)
    dev._reader.cancel()           # a board that hangs: it reads nothing more
    print("speaking", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


async def _started(proc):
    urls = {}
    while "config" not in urls:
        line = await asyncio.wait_for(proc.stdout.readline(), START_S)
        if not line:
            raise AssertionError("the server ended before it ran")
        key, _, value = line.decode().partition(":")
        urls[key.strip()] = value.strip().split(" ")[0]
    return urls


async def _health(url):
    async with aiohttp.ClientSession() as s:
        async with s.get(url) as r:
            return await r.json()


@pytest.mark.parametrize("workers,frozen", [(1, False), (2, True)])
async def test_a_device_killed_mid_reply_ends_its_session_and_sigterm_stops_the_server(
        tmp_path, fake_llm, workers, frozen):
    # The story streams as a model writes it: sentences keep coming while
    # the first ones are spoken (any opener line gets the same story).
    for _ in range(4):
        fake_llm.reply(STORY, chunk_delay=0.02)
    cfg = {
        "server": {"host": "127.0.0.1", "ws_port": 0, "http_port": 0, "workers": workers},
        "mqtt": {"port": free_port()},
        "control": {"db_path": str(tmp_path / "control.db")},
        "fleet": {"drain_timeout_s": DRAIN_S},
        "llm": {"type": "openai", "base_url": fake_llm.base_url, "api_key": "test", "model": "fake-model"},
    }
    (tmp_path / "server.yaml").write_text(json.dumps(cfg))
    env = dict(os.environ, PYTHONPATH="%s:%s" % (testkit.ROOT / "server", testkit.ROOT / "tests"))
    log_path = tmp_path / "server.log"
    with open(log_path, "wb") as log:
        server = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "xiaozhi_server", "run", "--config", str(tmp_path / "server.yaml"),
            cwd=tmp_path, env=env, stdout=asyncio.subprocess.PIPE, stderr=log)
    device = None
    try:
        urls = await _started(server)
        health = urls["OTA"].replace("/xiaozhi/ota/", "/health")
        device = await asyncio.create_subprocess_exec(sys.executable, "-c", DEVICE, urls["WebSocket"], env=env,
                                                      stdout=asyncio.subprocess.PIPE)
        assert (await asyncio.wait_for(device.stdout.readline(), START_S)).strip() == b"speaking"
        await eventually(lambda: _count(health, 1), timeout=60)
        if frozen:
            # A board that froze (or lost power: no FIN reaches the server):
            # the server's sends block on a full socket. SIGTERM must still stop it.
            device.send_signal(signal.SIGSTOP)
            server.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(server.wait(), DRAIN_S + 60) == 0
            return
        device.kill()
        await device.wait()
        # The session ends by itself: nothing counts it any more.
        await eventually(lambda: _health(health), timeout=60)
        await eventually(lambda: _count(health, 0), timeout=60)
        # A service manager's stop: the process ends, cleanly, within the
        # drain time plus a few seconds (a generous ceiling here; what is
        # asserted is that it ends at all, with its ports closed).
        server.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(server.wait(), DRAIN_S + 60) == 0
    finally:
        if device is not None and device.returncode is None:
            device.send_signal(signal.SIGCONT)
        for p in (device, server):
            if p is not None and p.returncode is None:
                p.kill()
                await p.wait()
    text = log_path.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]


async def _count(url, n):
    return (await _health(url))["sessions"] == n
