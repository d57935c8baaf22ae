# The SD repeat player's rules, on a fake clock and a backend the test ends
# by hand (a "natural end" is backend.finish()).
import json

import t
import proto
from hal.sdfs import CardFS
from app.player.player import RepeatPlayer, PlayerError


class FakeClock:
    def __init__(self):
        self.now = 0

    def ticks_ms(self):
        return self.now

    def ticks_diff(self, a, b):
        return a - b


class FakeMp3:
    def __init__(self):
        self.calls = []
        self.on_end = None

    def play(self, path):
        self.calls.append(("play", path.rsplit("/", 1)[-1]))

    def pause(self):
        self.calls.append(("pause",))

    def resume(self):
        self.calls.append(("resume",))

    def stop(self):
        self.calls.append(("stop",))

    def finish(self):
        self.on_end()


def _player(names=("a.mp3", "b.mp3")):
    d = t.tmpdir("sd")
    for n in names:
        with open(d + "/" + n, "wb") as f:
            f.write(b"\xff\xfb\x90\x00" + bytes(100))
    with open(d + "/readme.txt", "w") as f:
        f.write("x")
    clock, mp3, standby, events = FakeClock(), FakeMp3(), [], []
    p = RepeatPlayer(CardFS(d), mp3, clock, standby.append)
    p.listen(lambda ev, info: events.append((ev, info["pass"], info["repeat_left"])))
    return p, mp3, clock, standby, events


def test_app_player_counts_natural_ends_then_powers_off():
    p, mp3, clock, standby, events = _player()
    t.eq(p.play("a.mp3", 2, True), {"accepted": True, "status": "playing"})
    t.eq(p.status(), {"state": "playing", "name": "a.mp3", "repeat_left": 2, "power_off_after": True})
    mp3.finish()
    t.eq(standby, [])
    t.eq(p.status()["repeat_left"], 1)
    mp3.finish()
    t.eq(standby, [proto.STANDBY_REPEAT_DONE])
    t.eq(p.state, "idle")
    t.eq([c[0] for c in mp3.calls], ["play", "play"])
    t.eq([e[0] for e in events], ["playing", "pass_end", "playing", "pass_end", "done"])


def test_app_player_without_power_off_just_finishes():
    p, mp3, clock, standby, events = _player()
    p.play("a.mp3")
    mp3.finish()
    t.eq(p.state, "idle")
    t.eq(standby, [])


def test_app_player_stop_cancels_remaining_passes_and_power_off():
    p, mp3, clock, standby, events = _player()
    p.play("a.mp3", 3, True)
    t.true(p.stop(), "stop while playing")
    mp3.finish()  # a late end from the decoder is not a pass
    t.eq(standby, [])
    t.eq(p.status(), {"state": "idle", "name": None, "repeat_left": 0, "power_off_after": False})
    t.eq(p.stop(), False, "stop when idle")


def test_app_player_reply_pauses_resumes_and_cancels_the_rest():
    p, mp3, clock, standby, events = _player()
    p.play("a.mp3", 3, True)
    t.true(p.pause_for_reply(), "paused")
    t.eq(p.status(), {"state": "paused", "name": "a.mp3", "repeat_left": 1, "power_off_after": False})
    mp3.finish()  # no natural end while paused
    t.eq(p.state, "paused")
    t.true(p.resume_after_reply(), "resumed")
    mp3.finish()
    t.eq(p.state, "idle")
    t.eq(standby, [])
    t.eq([c[0] for c in mp3.calls], ["play", "pause", "resume"])
    t.eq([e[0] for e in events], ["playing", "paused", "resumed", "pass_end", "done"])


def test_app_player_resume_only_after_its_own_pause():
    p, mp3, clock, standby, events = _player()
    t.eq(p.resume_after_reply(), False, "nothing to resume")
    p.play("a.mp3")
    t.eq(p.resume_after_reply(), False, "playing, not paused")


def test_app_player_same_name_within_window_is_duplicate():
    p, mp3, clock, standby, events = _player()
    p.play("a.mp3", 2)
    clock.now = proto.DUPLICATE_WINDOW_MS - 1
    t.eq(p.play("a.mp3", 5, True), {"accepted": True, "status": "duplicate_ignored"})
    t.eq(p.status()["repeat_left"], 2)
    t.eq(p.power_off_after, False)
    clock.now = proto.DUPLICATE_WINDOW_MS
    t.eq(p.play("a.mp3", 1)["status"], "playing")
    t.eq(p.status()["repeat_left"], 1)


def test_app_player_same_name_after_stop_plays_again():
    p, mp3, clock, standby, events = _player()
    p.play("a.mp3")
    p.stop()
    t.eq(p.play("a.mp3")["status"], "playing")


def test_app_player_another_name_replaces_the_current_one():
    p, mp3, clock, standby, events = _player()
    p.play("a.mp3", 2, True)
    p.play("b.mp3")
    t.eq(p.status()["name"], "b.mp3")
    t.eq(p.power_off_after, False)
    t.eq(mp3.calls[-2:], [("stop",), ("play", "b.mp3")])


def test_app_player_lists_in_the_sening_shape_and_the_names_play():
    p, mp3, clock, standby, events = _player()
    listing = p.listing()
    t.eq(listing, [{"name": "a.mp3", "size": 104}, {"name": "b.mp3", "size": 104}])
    t.eq(proto.validate("result:self.mp3.get_list", {"files": listing}), None)
    t.eq(p.play(listing[1]["name"])["status"], "playing")
    t.eq(mp3.calls, [("play", "b.mp3")])


def test_app_player_refuses_names_not_on_the_list():
    p, mp3, clock, standby, events = _player()
    t.eq(p.files(), ["a.mp3", "b.mp3"])
    for bad in ("../boot.py", "/sd/a.mp3", "missing.mp3", "readme.txt", "", None, 3):
        t.raises(PlayerError, p.play, bad)
    t.eq(p.state, "idle")
    t.eq(mp3.calls, [])
    t.eq(events, [])


def test_app_player_refuses_bad_repeat_values():
    p, mp3, clock, standby, events = _player()
    for bad in (0, -1, 2.5, "3", True, None, 101):
        t.raises(PlayerError, p.play, "a.mp3", bad)
    t.raises(PlayerError, p.play, "a.mp3", 1, "yes")
    t.eq(p.state, "idle")
    t.eq(mp3.calls, [])


async def test_app_player_repeats_a_lesson_from_the_card_on_the_audio_engine():
    # Where the build has the audio engine (the board; make micropython's
    # unix port): the board's backend, decoding in C the bytes MicroPython
    # reads from a card mounted where only its VFS sees it, as on the board.
    import asyncio
    import audio
    from app.player.mp3_backend import BoardMp3
    if not hasattr(audio, "Mp3Player"):
        return
    d = t.tmpdir("card")
    with open("tests/firmware/data/cbr_1500ms_notag.mp3", "rb") as src, open(d + "/lesson.mp3", "wb") as f:
        f.write(src.read())
    standby, events, done = [], [], asyncio.Event()

    def seen(ev, info):
        events.append((ev, info["pass"], info["repeat_left"]))
        if ev == "done":
            done.set()

    p = RepeatPlayer(CardFS(t.mount_card(d)), BoardMp3(), FakeClock(), standby.append)
    p.listen(seen)
    t.eq(p.play("lesson.mp3", 2, True), {"accepted": True, "status": "playing"})
    await done.wait()
    t.eq(events, [("playing", 0, 2), ("pass_end", 1, 1), ("playing", 1, 1), ("pass_end", 2, 0), ("done", 2, 0)])
    t.eq(standby, [proto.STANDBY_REPEAT_DONE])
    t.eq(p.status()["state"], "idle")


def test_app_player_every_listed_name_plays_through_the_tool_call_subfolders_too():
    # What self.mp3.get_list offers must play: the listing walks subfolders
    # ("unit1/lesson.mp3"), and the tool's `sd_name` check refused any "/".
    import os
    from app.voice.mcp_server import McpServer
    p, mp3, clock, standby, events = _player(())
    root = p._sd.root
    for sub in ("unit1", "unit 2"):
        os.mkdir(root + "/" + sub)
        with open(root + "/" + sub + "/lesson.mp3", "wb") as f:
            f.write(b"\xff\xfb\x90\x00" + bytes(100))
    tools = {n: (lambda args: True) for n in proto.DEVICE_TOOL_NAMES}
    tools["self.mp3.get_list"] = lambda args: {"files": p.listing()}
    tools["self.mp3.play"] = lambda args: p.play(args["name"], args.get("repeat", 1))
    tools["self.mp3.stop"] = lambda args: {"stopped": p.stop()}
    srv = McpServer(tools)

    def call(rid, name, args):
        return srv.handle(proto.rpc_request(rid, "tools/call", {"name": name, "arguments": args}))
    listed = [f["name"] for f in json.loads(call(1, "self.mp3.get_list", {})["result"]["content"][0]["text"])["files"]]
    t.eq(listed, ["unit 2/lesson.mp3", "unit1/lesson.mp3"])
    for i, name in enumerate(listed):
        r = call(2 + i, "self.mp3.play", {"name": name})
        t.true("result" in r and not r["result"].get("isError"), repr(r))
        call(10 + i, "self.mp3.stop", {})
    t.eq([c for c in mp3.calls if c[0] == "play"], [("play", "lesson.mp3"), ("play", "lesson.mp3")])
    for bad in ("unit1/../unit1/lesson.mp3", "unit1//lesson.mp3", "/unit1/lesson.mp3", "unit1\\lesson.mp3",
                "unit1/.hidden.mp3"):
        t.eq(call(20, "self.mp3.play", {"name": bad})["error"]["code"], proto.RPC_INVALID_PARAMS, bad)
