# The board's Voice (firmware/hal/esp32/voice.py) over xzaudio.Speech, on
# builds with the audio engine (the unix port of `make micropython`): there
# the speech engine is the host stand-in (host/xz_speech_host.c), which
# takes its models from XZAUDIO_SR_MODELS (a folder laid out like esp-sr's)
# and what it "hears" as lines appended to XZAUDIO_SPEECH. So these tests
# drive wake and phrase events through the binding's real event path, the
# command table and the listening rule into Voice. The engine runs once per
# process, in the default wiring (no playback reference, so no echo
# cancellation); tests/host/cmodule/test_audio_modes.py runs the others.
import os
import sys

import asyncio

import audio
import t

WAKE_INFO = "wakenet9l_tts1h8_你好小智_3_0.631_0.635"  # esp-sr's wn9_nihaoxiaozhi_tts
MN_INFO = "MN7_v1_chinese_8_0.9_0.90"                # esp-sr's mn7_cn
_said = []  # the XZAUDIO_SPEECH file of this process


def _engine():
    return hasattr(audio, "_c") and hasattr(audio._c, "Speech") and hasattr(os, "putenv")


def _voice_module():
    # hal/esp32/__init__.py imports the board (machine, esp32): load the
    # module by its folder, as the unix port has neither.
    sys.path.insert(0, "firmware/hal/esp32")
    try:
        import voice
    finally:
        sys.path.pop(0)
    return voice


def _models(tag, *models):
    d = t.tmpdir(tag)
    for name, info in models:
        os.mkdir(d + "/" + name)
        with open(d + "/" + name + "/_MODEL_INFO_", "w") as f:
            f.write(info + "\n")
    return d


def _start_engine():
    if not audio._c.running():
        audio._c.start()


def _voice():
    """A Voice over the running speech engine (started on first use with
    both models and an event file)."""
    if not _said:
        _start_engine()
        os.putenv("XZAUDIO_SR_MODELS", _models("srmodels", ("wn9_nihaoxiaozhi_tts", WAKE_INFO),
                                               ("mn7_cn", MN_INFO)))
        path = t.tmpdir("speech") + "/said.txt"
        open(path, "w").close()
        os.putenv("XZAUDIO_SPEECH", path)
        _said.append(path)
    v = _voice_module().Voice()
    t.true(v.available, "engine and models are there")
    return v


def _say(line):
    with open(_said[0], "a") as f:
        f.write(line + "\n")


async def _within(coro, ms=5000):
    return await asyncio.wait_for_ms(coro, ms)


async def _hear(v, line):
    """Says line until it is heard (the speaker of an earlier test may
    still sound, as far as the engine knows) and returns the event."""
    sp = v._sp
    for _ in range(100):
        before = sp.stats()[2]
        _say(line)
        for _ in range(50):
            ev = v.poll()
            if ev is not None:
                return ev
            if sp.stats()[2] > before:
                break                     # not heard: say it again a little later
            await asyncio.sleep_ms(10)
        await asyncio.sleep_ms(100)
    raise AssertionError("%r was never heard" % line)


async def _stat_grows(sp, i, before, what):
    for _ in range(500):
        if sp.stats()[i] > before:
            return
        await asyncio.sleep_ms(10)
    raise AssertionError("%s: stats()[%d] stayed %d" % (what, i, before))


def test_absent_models_leave_voice_unavailable():
    # Sorted first: the engine has not run with models in this process yet.
    if not _engine() or audio._c.Speech().running():
        return
    _start_engine()
    os.putenv("XZAUDIO_SR_MODELS", _models("nomodels", ("mn7_cn", MN_INFO)))  # no WakeNet
    v = _voice_module().Voice()
    t.eq(v.available, False, "no wake word model: no voice")
    t.eq(v.poll(), None, "and no event")
    t.eq(audio._c.Speech().running(), False, "the engine did not start")


def test_command_words_come_from_the_table_once_each_with_pinyin():
    if not _engine():
        return
    import json
    with open("firmware/assets/commands.json") as f:
        table = json.load(f)
    words = _voice_module().command_words(table)
    phrases = [w[2] for w in words]
    t.eq(len(phrases), len(set(phrases)), "each phrase once")
    t.eq([w[0] for w in words], list(range(1, len(words) + 1)), "ids from 1")
    t.true(("切换模式" in phrases) and ("成语接龙" in phrases), "phrases of every step")
    t.eq(words[phrases.index("切换模式")][1], "qie huan mo shi", "MultiNet gets the pinyin")


async def test_wake_and_phrase_events_reach_voice_with_word_and_score():
    if not _engine():
        return
    v = _voice()
    t.eq(v.aec, False, "the default wiring has no playback reference")
    t.eq(await _hear(v, "wake 0.93 -28.5"), ("wake", "你好小智"), "the model's wake word")
    kind, word, score, level = v.last
    t.true(abs(score - 0.93) < 1e-3 and abs(level + 28.5) < 1e-3, "score and level: %r" % (v.last,))
    await _hear(v, "wake")
    t.eq(v.last[2], None, "no score when the engine gives none (the board's AFE)")
    _say("phrase 0.40 ni hao ma")            # not a command: MultiNet never answers it
    t.eq(await _hear(v, "phrase 0.81 qie huan mo shi"), ("phrase", "切换模式"), "the table's phrase")
    t.true(abs(v.last[2] - 0.81) < 1e-3, "MultiNet's probability")
    t.eq(v.poll(), None, "nothing else queued")


async def test_refused_command_texts_are_reported_and_never_match():
    if not _engine():
        return
    v = _voice()
    sp = v._sp
    refused = sp.set_commands(((1, "qie huan mo shi", "切换模式"), (2, "切换模式", "x"),
                               (3, "da kai  fan yi", "y"), (4, "bei shu zi 2", "z")))
    t.eq(refused, (2, 3, 4), "Han characters, a double space, a digit")
    _say("phrase 0.9 切换模式")
    t.eq(await _hear(v, "phrase 0.9 qie huan mo shi"), ("phrase", "切换模式"), "only the accepted one")
    t.raises(ValueError, sp.set_commands, ((0, "a", "b"),))
    t.raises(ValueError, sp.set_commands, ((1, "a" * 64, "b"),))
    v._set_commands()                         # the table again, for the tests after this one


async def test_nothing_is_heard_while_paused_or_disabled():
    if not _engine():
        return
    v = _voice()
    sp = v._sp
    for off, on in ((v.pause, lambda: v.pause(False)), (lambda _: v.enable(False), lambda: v.enable(True))):
        before = sp.stats()[2]
        off(True)
        _say("wake 0.9")
        await _stat_grows(sp, 2, before, "a line said while off")
        on()
        t.eq(await _hear(v, "phrase 0.7 kai shi fu du"), ("phrase", "开始复读"), "heard again once back on")


async def test_without_a_reference_the_device_does_not_hear_while_its_speaker_plays():
    # No echo cancellation: while the speaker sounds (here a lesson; a
    # reply counts the same) and for its echo tail, the engine does not
    # listen; once it is quiet it does.
    if not _engine():
        return
    v = _voice()
    sp = v._sp
    played = t.tmpdir("spk") + "/played.pcm"
    os.putenv("XZAUDIO_SPK", played)
    audio.AudioOut(24000)
    d = t.tmpdir("lesson")
    with open("tests/firmware/data/cbr_1500ms_notag.mp3", "rb") as src:
        data = src.read()
    with open(d + "/long.mp3", "wb") as f:
        for _ in range(20):                                  # 30 s
            f.write(data)
    p = audio.Mp3Player()
    p.play(t.mount_card(d) + "/long.mp3")
    for _ in range(500):                                    # the speaker has begun
        if _size(played):
            break
        await asyncio.sleep_ms(10)
    before = sp.stats()[2]
    _say("wake 0.95")
    await _stat_grows(sp, 2, before, "a wake word said over the device's own sound")
    t.eq(v.poll(), None, "not heard while the speaker plays")
    p.stop()
    t.eq(await _within(p.next_event()), audio.MP3_STOPPED, "the lesson stopped")
    t.eq(await _hear(v, "wake 0.95"), ("wake", "你好小智"), "heard once the device is quiet")


def _size(path):
    try:
        return os.stat(path)[6]
    except OSError:
        return 0
