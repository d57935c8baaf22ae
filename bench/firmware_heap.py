"""Heap of the firmware frozen into the 32-bit unix port, as on the board.

    make micropython-frozen && .venv/bin/python bench/firmware_heap.py

Six runs, each a fresh board in a 256 KB heap (bench/heap_probe.py
samples the live heap): plain boot (voice server, no broker), the broker
configured (MQTT up, voice session up), and a lesson playing (a parents'
repeater task over MQTT until its first pass ends); then the plain boot
again holding the board's Voice over the speech engine (its host
stand-in: the Python side is the board's, command words set); then the
broker run and the lesson again with TLS on both channels (wss://, mqtts://,
the server's certificate checked against a throwaway CA). Prints, per run,
the firmware's own "heap after boot" line and the sampled peak. The unix
port's mbedtls allocates with libc, outside this heap (on the board: in
ESP-IDF's heap, also outside it): bench/tls_handshake.py measures that.
"""
import asyncio
import pathlib
import re
import ssl
import sys
import tempfile

import aiohttp

ROOT = pathlib.Path(__file__).resolve().parents[1]

from testkit.consoles import PipeConsole  # noqa: E402
from testkit.control_api import Api, control_config  # noqa: E402
from testkit.fake_llm import FakeLLM  # noqa: E402
from testkit.mosquitto import free_port  # noqa: E402
from testkit.firmware_process import prepare_state  # noqa: E402
from testkit.tls_ca import TestCA  # noqa: E402
from testkit.node import start_node  # noqa: E402

FROZEN = ROOT / "build/micropython/unix32-frozen/micropython"
HEAP = "256K"
DEVICE_ID = "02:00:00:00:e0:09"
LESSON = {"app_id": "english_learning", "task_id": "repeater", "params": {"name": "lesson1.mp3", "repeat": 1}}
AFTER_BOOT = re.compile(r"heap after boot: (\d+) used, (\d+) free")
PEAK = re.compile(r"heap-probe: peak (\d+) used, (\d+) free")
WAIT_S = 60


def _figures(lines):
    """(heap used after boot, sampled peak) from the board's log lines."""
    after_boot, peak = None, 0
    for line in lines:
        m = AFTER_BOOT.search(line)
        if m:
            after_boot = int(m.group(1))
        m = PEAK.search(line)
        if m:
            peak = max(peak, int(m.group(1)))
    return after_boot, peak


WAKE_INFO = "wakenet9l_tts1h8_你好小智_3_0.631_0.635"   # esp-sr's wn9_nihaoxiaozhi_tts
MN_INFO = "MN7_v1_chinese_8_0.9_0.90"                   # esp-sr's mn7_cn


def _speech_env(folder):
    """The speech engine stand-in's environment: a model folder as esp-sr lays it out."""
    for name, info in (("wn9_nihaoxiaozhi_tts", WAKE_INFO), ("mn7_cn", MN_INFO)):
        (folder / name).mkdir(parents=True)
        (folder / name / "_MODEL_INFO_").write_text(info + "\n")
    return {"XZ_PROBE_SPEECH": "1", "XZAUDIO_SR_MODELS": str(folder)}


async def run(server, api, state, mqtt, lesson, speech=False, ca=None):
    cfg = {"server_url": server.ws.url, "ota_url": "", "clock_speed": 1}
    if ca is not None:
        cfg["tls"] = {"ca_file": ca.ca_pem}
    if mqtt:
        creds = (await server.control.devices.provision(DEVICE_ID))["mqtt"]
        cfg["mqtt"] = {"url": server.broker.device_url("127.0.0.1"), "keepalive": 30,
                       "user": creds["username"], "password": creds["password"]}
    prepare_state(state, cfg)
    (state / "mac").write_text(DEVICE_ID.replace(":", ""))
    env = {"MICROPYPATH": ".frozen", "PATH": "/usr/bin:/bin"}
    if speech:
        env.update(_speech_env(state.parent / "srmodels"))
    board = await PipeConsole.start(
        [str(FROZEN), "-X", "heapsize=" + HEAP, "bench/heap_probe.py", "--state", str(state), "--json"],
        env=env, name="the frozen board")
    try:
        await board.wait_event("state", WAIT_S, state="listening")
        if mqtt:
            await board.wait_event("mqtt", WAIT_S, action="CONNECT")
        if lesson:
            status, body = await api.post("/api/devices/%s/tasks" % DEVICE_ID, LESSON, wait=10)
            if status >= 300:
                raise RuntimeError("task refused: %s %s" % (status, body))
            await board.wait_event("player", WAIT_S, state="pass_end")
    finally:
        await board.close(quit_first=True)
    return _figures(board.lines)


async def main():
    if not FROZEN.exists():
        sys.exit("%s is missing: make micropython-frozen" % FROZEN.relative_to(ROOT))
    rows = []
    for title, mqtt, lesson, speech, tls in (("plain boot", False, False, False, False),
                                             ("MQTT configured", True, False, False, False),
                                             ("lesson playing (MQTT)", True, True, False, False),
                                             ("plain boot + speech", False, False, True, False),
                                             ("TLS: wss + mqtts", True, False, False, True),
                                             ("lesson playing (TLS)", True, True, False, True)):
        with tempfile.TemporaryDirectory() as tmp, FakeLLM() as llm:
            llm.default_reply = "好的。"
            ca = TestCA(pathlib.Path(tmp) / "ca") if tls else None
            cfg = control_config(pathlib.Path(tmp) / "control.db",
                                 **({"tls": {"cert": ca.good[0], "key": ca.good[1]}} if tls else {}))
            cfg["llm"] = {"type": "openai", "base_url": llm.base_url, "api_key": "x", "model": "fake"}
            if tls:
                cfg["mqtt"]["tls_port"] = free_port()
            server = await start_node(cfg, with_broker=True)
            try:
                async with aiohttp.ClientSession() as http:
                    api = Api(server, http)
                    if tls:
                        api.base = server.http.base_url
                        api.http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(
                            ssl=ssl.create_default_context(cafile=ca.ca_pem)))
                    try:
                        figures = await run(server, api, pathlib.Path(tmp) / "state", mqtt, lesson, speech, ca)
                    finally:
                        if tls:
                            await api.http.close()
            finally:
                await server.stop()
        rows.append((title,) + figures)
    print("firmware heap, frozen 32-bit unix port, -X heapsize=%s (%d bytes)" % (HEAP, 256 * 1024))
    print("%-24s %16s %16s" % ("run", "after boot", "peak (sampled)"))
    for title, after, peak in rows:
        print("%-24s %13.1f KB %13.1f KB" % (title, (after or 0) / 1024, peak / 1024))


if __name__ == "__main__":
    asyncio.run(main())
