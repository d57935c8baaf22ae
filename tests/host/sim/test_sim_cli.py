"""tools/sim.py end to end against the real server on loopback: what a user
of the simulator sees on its console (JSON lines, each a valid sim.event),
the reply WAVs it writes, and how it ends."""
import asyncio
import sys
from pathlib import Path

import pytest

from simkit import use_host_hal
from testkit import MICROPYTHON_BUILD, ROOT, audio
from testkit.control_api import eventually
from testkit.consoles import PtyConsole
from testkit.server import server_config
from xiaozhi_server import protocol as proto


def config(llm_url):
    # A short opener: each test hears it before it may speak.
    return server_config(llm_url, apps={"opener_lines": {"zh": ["你好呀！"], "en": ["Hi there!"]},
                                        "max_reinvites": 0})


def voiced(path):
    with open(path, "rb") as f:
        pcm, rate = audio.read_wav(f.read())
    return audio.seconds(pcm, rate), audio.voiced_fraction(pcm, rate)


async def boot_to_opener(sim):
    await sim.wait_event("boot", wake_cause="power_on")
    opener = await sim.wait_event("subtitle", role="assistant", timeout=30)
    reply = await sim.wait_event("reply", timeout=30)
    await sim.wait_event("state", state="listening", since=sim.events.index(reply))
    return opener, reply


async def test_opener_heard_then_a_spoken_question_answered(fake_llm, start_server, run_sim, tmp_path):
    fake_llm.reply("🙂 I am Xiaozhi, your little friend.")
    server = await start_server(config(fake_llm.base_url))
    sim = await run_sim(tmp_path / "state", "--server", server.http.ota_url, "--device-id", "02:00:00:00:00:11")
    boot = await sim.wait_event("boot")
    assert boot["device_id"] == "02:00:00:00:00:11"
    opener, reply = await boot_to_opener(sim)
    assert opener["text"]  # the server's opener line, shown as a subtitle
    seconds, speech = voiced(reply["wav"])
    assert reply["wav"].startswith(str(tmp_path / "state" / "speaker")) and seconds > 0.5 and speech > 0.3
    mark = len(sim.events)
    await sim.send("say What is your name?")
    heard = await sim.wait_event("subtitle", role="user", since=mark, timeout=40)
    assert "name" in heard["text"].lower()
    answer = await sim.wait_event("subtitle", role="assistant", since=mark, timeout=30)
    assert "little friend" in answer["text"]
    second = await sim.wait_event("reply", since=mark, timeout=30)
    assert second["index"] == reply["index"] + 1 and voiced(second["wav"])[1] > 0.3
    await sim.send("quit")
    assert await sim.wait_exit() == 0
    assert sim.events[-1] == {"event": "exit", "reason": "quit", "code": 0}
    assert sim.bad_lines == []  # stdout held nothing but valid events
    assert fake_llm.requests[0].messages[-1]["content"].lower().startswith("what is your name")


async def test_power_off_is_standby_and_the_state_survives(fake_llm, start_server, run_sim, tmp_path):
    fake_llm.reply_tool_calls(("self_power_off", {}))
    fake_llm.default_reply = "🙂 Good night."
    server = await start_server(config(fake_llm.base_url))
    state = tmp_path / "state"
    sim = await run_sim(state, "--server", server.ws.url)
    await boot_to_opener(sim)
    first_id = sim.find("boot")[0]["device_id"]
    await sim.send("say Please turn yourself off now.")
    await sim.wait_event("standby", cause="power_off", timeout=40)
    assert await sim.wait_exit() == 0
    assert sim.events[-1] == {"event": "exit", "reason": "standby", "code": 0}
    assert sim.bad_lines == []
    # the next run over the same state is the same board, an hour later, woken by its button
    again = await run_sim(state, "--server", server.ws.url, "--advance", "3600")
    boot = await again.wait_event("boot")
    assert boot["device_id"] == first_id and boot["wake_cause"] == "power_on"
    await again.send("quit")
    assert await again.wait_exit() == 0


def arm_rtc_alarm(state, in_seconds):
    """Set a one-shot alarm the way the board does for SET_ALARM: an entry
    in its alarm table (NVS), from which the firmware programs the DS3231
    through the HAL's I2C bus (the state dir keeps records and registers).
    The board derives the chip from that table at every boot, so an alarm
    written to the chip alone would be cleared as stale."""
    use_host_hal()   # the simulator's own way to the board's code
    from hal.host.board import HostBoard
    from ds3231 import DS3231
    from nvs_store import RecordStore
    from app.entry.alarms import Alarms
    board = HostBoard(str(state))
    rtc = DS3231(board.i2c)
    now = board.clock.time()
    rtc.set_time(now)
    alarms = Alarms(rtc, RecordStore(board.nvs("xzalarms"), 2048), 0,
                    pending_store=RecordStore(board.nvs("xiaozhi")))
    chat = {"app_id": proto.DEFAULT_APP_ID, "task_id": proto.DEFAULT_TASK_ID, "params": {}}
    assert alarms.set({"alarm_id": "sim", "at": now + in_seconds, "pending_task": chat}, now) is None
    board.stop()


async def test_wake_on_alarm_sleeps_until_the_rtc_alarm_and_boots_again(fake_llm, start_server, run_sim, tmp_path):
    fake_llm.reply_tool_calls(("self_power_off", {}))
    fake_llm.default_reply = "🙂 Good night."
    server = await start_server(config(fake_llm.base_url))
    state = tmp_path / "state"
    arm_rtc_alarm(state, 600)
    sim = await run_sim(state, "--server", server.ws.url, "--wake-on-alarm")
    await boot_to_opener(sim)
    await sim.send("say Please turn yourself off now.")
    await sim.wait_event("standby", cause="power_off", timeout=40)
    sleep = await sim.wait_event("sleep", timeout=10)
    assert 500 < sleep["seconds"] <= 600   # the alarm set above, minus the time the board was up
    boot = await sim.wait_event("boot", since=sim.events.index(sleep))
    assert boot["wake_cause"] == "alarm"
    await sim.send("quit")
    assert await sim.wait_exit() == 0
    assert sim.bad_lines == []


async def test_power_cut_ends_without_standby(run_sim, tmp_path):
    sim = await run_sim(tmp_path / "state", "--server", "ws://127.0.0.1:9/xiaozhi/v1/")
    await sim.wait_event("error", message="cannot reach the server")
    await sim.wait_event("state", state="idle", since=2)
    await sim.send("power_cut")
    assert await sim.wait_exit() == 0
    assert sim.events[-1] == {"event": "exit", "reason": "power_cut", "code": 0}
    assert sim.find("standby") == []


@pytest.mark.parametrize("lang,port", [("zh", []), ("en", []), ("zh", ["--micropython"])])
async def test_the_voice_menu_asks_aloud_offline_and_says_when_it_times_out(run_sim, tmp_path, lang, port):
    # 「切换模式」 with no server: the device itself asks which mode (the
    # lines rendered into the assets), in the child's language, and says a
    # line when no answer comes. Both are heard: a reply WAV each.
    import json
    table = json.loads((ROOT / "firmware" / "assets" / "commands.json").read_text(encoding="utf-8"))
    table["menu_timeout_ms"] = 1500
    state = tmp_path / "state"
    state.mkdir()
    (tmp_path / "commands.json").write_text(json.dumps(table, ensure_ascii=False), encoding="utf-8")
    (state / "config.json").write_text(json.dumps({"commands_path": str(tmp_path / "commands.json"),
                                                   "language": lang}))
    sim = await run_sim(state, "--server", "ws://127.0.0.1:9/xiaozhi/v1/", *port)
    await sim.wait_event("state", state="idle", since=2)
    mark = sim.mark()
    await sim.send("phrase 切换模式")
    menu = await sim.wait_event("menu", what="open")     # once asked: the reply comes first
    assert menu["step"] == "voice_entry" and menu["spoken"] is True
    assert menu["choices"] == ["打开翻译", "开始复读", "我们来聊天吧"]
    index = json.loads((ROOT / "firmware" / "assets" / "prompts" / "index.json").read_text(encoding="utf-8"))
    asked = sim.find("reply", since=mark)
    assert len(asked) == 1, sim.events[mark:]
    seconds, speech = voiced(asked[0]["wav"])
    assert abs(seconds - index["voice_entry"][lang]["seconds"]) < 0.2 and speech > 0.3
    mark = sim.mark()
    await sim.wait_event("menu", what="timeout", since=mark)
    said = sim.find("reply", since=mark)
    assert len(said) == 1, sim.events[mark:]
    said = said[0]
    seconds, speech = voiced(said["wav"])
    assert abs(seconds - index["menu_timeout"][lang]["seconds"]) < 0.2 and speech > 0.3
    # The menu is closed: its own words are no command words any more. 背数字
    # is the menu's alone (打开翻译 is a main command word too: said now it
    # starts the translation, and whether that shows before the status
    # answer is a race); in the menu it would be refused as not available.
    await sim.send("phrase 背数字")
    await sim.send("status")
    await sim.wait_event("status", since=sim.events.index(said))
    assert not sim.find("task", task_id="digit_recitation")
    await sim.send("quit")
    assert await sim.wait_exit() == 0
    assert sim.bad_lines == []


async def test_the_voice_menu_takes_the_floor_from_a_conversation_and_gives_it_back(
        start_server, run_sim, tmp_path):
    # In a conversation: the device stops listening to ask (the server is
    # not sent the question), and after the menu's timeout it listens again.
    import json
    table = json.loads((ROOT / "firmware" / "assets" / "commands.json").read_text(encoding="utf-8"))
    table["menu_timeout_ms"] = 1500
    state = tmp_path / "state"
    state.mkdir()
    (tmp_path / "commands.json").write_text(json.dumps(table, ensure_ascii=False), encoding="utf-8")
    (state / "config.json").write_text(json.dumps({"commands_path": str(tmp_path / "commands.json")}))
    server = await start_server(config(None))
    sim = await run_sim(state, "--server", server.ws.url)
    await boot_to_opener(sim)
    mark = sim.mark()
    await sim.send("phrase 切换模式")
    await sim.wait_event("menu", what="open")
    assert sim.find("state", since=mark)[0]["state"] == "idle"      # stopped listening to ask
    assert len(sim.find("reply", since=mark)) == 1
    timeout = await sim.wait_event("menu", what="timeout", since=mark)
    await sim.wait_event("state", state="listening", since=sim.events.index(timeout))
    await sim.send("quit")
    assert await sim.wait_exit() == 0


async def test_console_commands_answer_as_events(run_sim, tmp_path):
    sim = await run_sim(tmp_path / "state", "--server", "ws://127.0.0.1:9/xiaozhi/v1/")
    await sim.wait_event("state", state="idle", since=2)
    await sim.send("status")
    st = await sim.wait_event("status")
    before = sim.events[:sim.events.index(st)]
    assert st["state"] == [e for e in before if e["event"] == "state"][-1]["state"]  # what the console showed
    assert st["player"] == "idle" and st["repeat_left"] == 0
    await sim.send("fly away")
    await sim.wait_event("error", message="unknown command: fly away")
    await sim.send("warp 90")
    assert (await sim.wait_event("warp"))["seconds"] == 90
    await sim.send("mic /no/such.wav")
    err = await sim.wait_event("error", since=len(sim.events) - 1)
    assert "/no/such.wav" in err["message"]
    await sim.send("quit")
    assert await sim.wait_exit() == 0
    assert sim.bad_lines == []


async def test_the_console_on_a_pty(run_sim, tmp_path):
    sim = await run_sim(tmp_path / "state", "--pty", "--server", "ws://127.0.0.1:9/xiaozhi/v1/")
    path = (await sim.wait_event("pty"))["path"]
    await sim.wait_event("state", state="idle", since=2)
    port = PtyConsole(path)
    try:
        port.send("status")
        assert (await port.log.wait_async("status", timeout=10))["player"] == "idle"
    finally:
        port.close()
    await sim.send("quit")
    assert await sim.wait_exit() == 0


async def test_micropython_board_hears_the_opener(start_server, run_sim, tmp_path):
    server = await start_server(config(None))
    sim = await run_sim(tmp_path / "state", "--micropython", "--server", server.ws.url)
    opener, reply = await boot_to_opener(sim)
    seconds, speech = voiced(reply["wav"])  # decoded by the sim from the frames the board kept
    assert seconds > 0.5 and speech > 0.3
    if MICROPYTHON_BUILD.exists():
        # The 32-bit build also played every frame through the board's C
        # speaker path (xzaudio AudioOut over the host engine): the same reply.
        played = tmp_path / "state" / "speaker" / "played.pcm"
        await eventually(lambda: played.exists() and audio.seconds(played.read_bytes(), 24000) >= seconds - 0.07)
        pcm = played.read_bytes()
        assert abs(audio.seconds(pcm, 24000) - seconds) <= 0.07 and audio.voiced_fraction(pcm, 24000) > 0.3
    await sim.send("quit")
    assert await sim.wait_exit() == 0
    assert sim.bad_lines == []


@pytest.mark.parametrize("nvs", [
    b"\x00\xff\x13 flash garbage", b'{"xiaozhi": {"pending.g": ["i", 0], "pending.0": ["b", "7b22',
    # a partition that reads, with values no firmware wrote: the client id
    # is not UTF-8, the pending record is a list
    b'{"xiaozhi": {"client_id": ["b", "fffe41"], "pending.g": ["i", 0], "pending.0": ["b", "5b315d"]}}'])
async def test_a_corrupt_nvs_partition_boots_to_chat_with_a_log_line(start_server, run_sim, tmp_path, nvs):
    server = await start_server(config(None))
    state = tmp_path / "state"
    state.mkdir()
    (state / "nvs.json").write_bytes(nvs)
    sim = await run_sim(state, "--server", server.ws.url)
    await boot_to_opener(sim)
    text = "\n".join(sim.lines)
    assert "erased, booting on defaults" in text or "treated as absent" in text or "new one is made" in text
    await sim.send("quit")
    assert await sim.wait_exit() == 0


async def test_pip_64_bit_port_runs_a_conversation_and_says_its_heap_is_not_the_boards(
        start_server, run_sim, tmp_path, monkeypatch):
    # A newcomer without the MicroPython source has only pip's 64-bit port:
    # at 256 KB it died with MemoryError at the server's first MCP message.
    pip_port = Path(sys.executable).parent / "micropython"
    if not pip_port.exists():
        pytest.skip("pip's MicroPython unix port is not installed")
    monkeypatch.setenv("XIAOZHI_MICROPYTHON", str(pip_port))
    server = await start_server(config(None))
    sim = await run_sim(tmp_path / "state", "--micropython", "--server", server.ws.url)
    await boot_to_opener(sim)
    await sim.send("status")
    assert (await sim.wait_event("status"))["state"] == "listening"
    await sim.send("quit")
    assert await sim.wait_exit() == 0
    text = "\n".join(sim.lines)
    assert "MemoryError" not in text and "64-bit MicroPython port" in text


@pytest.mark.parametrize("args", [["--device-id", "board-7"], ["--mqtt", "nohost"], ["--server", "ftp://x"]])
async def test_bad_options_exit_2(args, tmp_path):
    proc = await asyncio.create_subprocess_exec(sys.executable, "tools/sim.py", "--state", str(tmp_path), *args,
                                                cwd=ROOT, stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    assert proc.returncode == 2 and b"must" in err
