# The host board: clock, SD, power records, buttons, Wi-Fi, audio, voice.
import os

import t
import hal
import hal.host
import asyncio

IS_MP = hasattr(asyncio, "wait_for_ms")


def _board(d=None, **kw):
    exits = []
    b = hal.host.board(d or t.tmpdir("brd"), exit_fn=exits.append, **kw)
    return b, exits


def _within(coro, ms):
    """Run coro to completion, failing if it needs more than ms of real time."""
    async def main():
        if IS_MP:
            return await asyncio.wait_for_ms(coro, ms)
        return await asyncio.wait_for(coro, ms / 1000)
    return asyncio.run(main())


def test_hal_board_is_one_host_board_per_process():
    hal.reset_for_tests()
    b = hal.board(state_dir=t.tmpdir("one"))
    t.true(hal.board() is b, "same board twice")
    t.eq(b.name, "host")
    for part in ("sd", "i2c", "rtc_int", "power", "clock", "mic", "speaker", "wifi", "buttons", "voice"):
        t.true(hasattr(b, part), part)
    hal.reset_for_tests()


def test_clock_warp_wakes_a_long_sleep_and_moves_wall_time():
    b, _ = _board()
    c = b.clock
    c.set_time(1800000000)
    t0 = c.ticks_ms()

    async def scenario():
        async def warper():
            await asyncio.sleep_ms(10) if IS_MP else await asyncio.sleep(0.01)
            c.warp(3600)
        task = asyncio.create_task(warper())
        await c.sleep_ms(3600 * 1000)
        await task
    _within(scenario(), 5000)  # an hour of simulated time, not of real time
    t.true(c.ticks_diff(c.ticks_ms(), t0) >= 3600 * 1000, "slept the whole hour")
    t.true(c.time() >= 1800003600, "wall time moved with the warp")


def test_sd_lists_and_opens_only_inside_the_card():
    b, _ = _board()
    root = b.sd.root
    os.mkdir(root + "/lessons")
    for name in ("a.mp3", "lessons/b.mp3", "notes.txt"):
        with open(root + "/" + name, "wb") as f:
            f.write(b"ID3")
    t.eq(b.sd.list(), ["a.mp3", "lessons/b.mp3", "notes.txt"])
    t.eq(b.sd.list(suffix=".mp3"), ["a.mp3", "lessons/b.mp3"])
    with b.sd.open("lessons/b.mp3") as f:
        t.eq(f.read(), b"ID3")
    for bad in ("../boot.py", "/etc/passwd", "lessons/../../x", "", "a\\b", "./a.mp3"):
        t.raises(ValueError, b.sd.open, bad)
    t.true(not b.sd.exists("missing.mp3"), "missing file")


def test_standby_exits_and_next_boot_knows_why():
    d = t.tmpdir("pw")
    b, exits = _board(d)
    t.eq(b.wake_cause(), "power_on")
    b.power.standby("repeat_done")
    t.eq(exits, [0])
    t.eq(b.power.last_record["cause"], "repeat_done")
    b2, exits2 = _board(d)
    t.eq(b2.wake_cause(), "power_on", "no alarm pending: a user powered it on")
    b2.power.reset()
    b3, _ = _board(d)
    t.eq(b3.wake_cause(), "reset")
    b4, _ = _board(d, wake="button")
    t.eq(b4.wake_cause(), "button")
    t.raises(ValueError, _board, d, wake="lightning")


def test_standby_without_exit_hook_raises_system_exit():
    b = hal.host.board(t.tmpdir("se"))
    try:
        b.power.standby()
    except SystemExit as e:
        t.eq(e.args[0] if e.args else e.code, 0)
    else:
        raise AssertionError("standby must end the process")


def test_buttons_fire_falling_edge_irqs():
    b, _ = _board()
    got = []
    btn = b.buttons["boot"]
    btn.irq(lambda pin: got.append(pin.name), btn.IRQ_FALLING)
    t.eq(btn.value(), 1)
    btn.press()
    t.eq(got, ["boot"])


def test_wifi_mac_is_stable_across_runs():
    d = t.tmpdir("wifi")
    b, _ = _board(d)
    mac = b.wifi.mac_str()
    t.eq(len(b.wifi.mac()), 6)
    b2, _ = _board(d)
    t.eq(b2.wifi.mac_str(), mac)
    t.eq(_within(b2.wifi.connect("home", "pw", 1000), 2000), True)
    t.true(b2.wifi.isconnected(), "connected")
    b3, _ = _board(t.tmpdir("wifi"), wifi_reachable=False, speed=1000)
    t.eq(_within(b3.wifi.connect("home", "pw", 5000), 2000), False)


def test_voice_events_are_dropped_while_disabled():
    b, _ = _board()
    b.voice.inject_wake()
    b.voice.enable(False)
    b.voice.inject_phrase("打开翻译")
    t.eq(b.voice.dropped, 1)
    t.eq(_within(b.voice.next_event(), 1000), ("wake", "你好小智"))
    t.eq(b.voice.poll(), None)


def test_a_wake_word_carries_its_level_and_score_as_on_the_board():
    b, _ = _board()
    b.voice.inject_wake("小智小智", -21.0, 0.9)
    t.eq(_within(b.voice.next_event(), 1000), ("wake", "小智小智"))
    t.eq(b.voice.last, ("wake", "小智小智", 0.9, -21.0))    # hal/esp32/voice.py's (kind, word, score, level_db)


def test_mic_frames_from_files_and_speaker_replies():
    b, _ = _board(speed=100)
    d = t.tmpdir("frames")
    for i, fr in enumerate((b"\x01\x02", b"\x03", b"\x04\x05\x06")):
        with open("%s/%03d.opus" % (d, i), "wb") as f:
            f.write(fr)
    b.mic.feed_frames(d)
    buf = bytearray(512)

    async def scenario():
        got = []
        for _ in range(4):
            n = await b.mic.read_frame(buf)
            got.append(bytes(buf[:n]))
        b.speaker.begin_reply()
        for fr in got[:3]:
            await b.speaker.write_frame(fr)
        await b.speaker.drain()
        return got
    got = _within(scenario(), 3000)
    t.eq(got, [b"\x01\x02", b"\x03", b"\x04\x05\x06", b""])  # then silence
    wav = b.speaker.end_reply()
    if wav is not None:  # CPython decodes; these bytes are mostly not real Opus
        t.true(b.speaker.bad_frames >= 1, "corrupt frames are counted")
        t.true(os.stat(wav)[6] >= 44 + 2 * 1440 * 2, "bad frames play as 60 ms of silence")
    out = b.state_dir + "/speaker/reply_0001"
    t.eq(sorted(os.listdir(out)), ["00000.opus", "00001.opus", "00002.opus"])
    t.eq(b.speaker.replies, [[b"\x01\x02", b"\x03", b"\x04\x05\x06"]])


def test_rtc_int_fires_while_the_app_runs():
    import ds3231
    b, _ = _board()
    rtc = ds3231.DS3231(b.i2c)
    rtc.set_time(1800000000)
    rtc.set_alarm_once(1800000000 + 90)
    rtc.enable_alarm()
    fired = []
    b.rtc_int.irq(lambda pin: fired.append(b.clock.time()), b.rtc_int.IRQ_FALLING)

    async def scenario():
        b.start()
        b.clock.warp(89)
        await b.clock.sleep_ms(3000)
        b.stop()
    _within(scenario(), 8000)
    t.eq(len(fired), 1, "one falling edge on INT")
