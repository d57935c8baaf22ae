# The speaker amplifier on the simulated Sening board (its enable line on
# the PCA9557 model): off while nothing plays, on before a reply's first
# frame, on through the whole reply (no click between its sentences), off
# again once the output has been idle for hal.amp.IDLE_MS; an SD lesson
# holds it as long as it plays. Time moves by warps of the board clock.
import t
import hal.host
import proto
import asyncio
from app.events import Bus
from app.player.mp3_backend import backend_for
from app.player.player import RepeatPlayer
from app.voice.conversation import Conversation
from app.voice.state import DeviceState
from hal.amp import IDLE_MS

FRAME = b"\xf8\xff\xfe"   # one 60 ms Opus frame
MP3 = "tests/firmware/data/cbr_1500ms_notag.mp3"


async def _settle():
    """Let woken tasks run (a warp wakes sleepers; they run on later turns)."""
    for _ in range(20):
        await asyncio.sleep(0)


def _device(sd=None):
    d = t.tmpdir("amp")
    b = hal.host.board(d, exit_fn=lambda c: None, profile="sening", sd_dir=sd)
    state = DeviceState()
    for s in (proto.STATE_STARTING, proto.STATE_IDLE):
        state.go(s)
    player = RepeatPlayer(b.sd, backend_for(b), b.clock)

    async def no_channel():
        return False
    talk = Conversation(b, state, player, Bus(), proto.LISTEN_MODE_MANUAL, no_channel)
    return b, talk, player


async def _reply(b, talk, sentences, gap_s=0):
    """One server reply: tts start, per sentence its subtitle and frames,
    tts stop; returns once the device has played it out (idle again)."""
    talk.on_message(proto.tts(proto.TTS_START, "s"))
    for i in range(sentences):
        if i and gap_s:
            b.clock.warp(gap_s)   # the server is slow with the next sentence
            await _settle()
            t.eq(b.frontend.amp_on(), True, "on between the sentences of one reply")
        talk.on_message(proto.tts(proto.TTS_SENTENCE_START, "s", text="sentence %d" % i))
        for _ in range(3):
            await talk.on_audio(FRAME)
    talk.on_message(proto.tts(proto.TTS_STOP, "s"))
    while talk.state.is_(proto.STATE_SPEAKING):
        b.clock.warp(0.2)        # the speaker drains what it holds
        await _settle()


async def test_the_amplifier_is_off_until_a_reply_and_goes_off_after_it_idles():
    b, talk, _ = _device()
    fe = b.frontend
    t.eq(fe.amp_on(), False, "nothing played since boot: amplifier off")
    await _reply(b, talk, 2, gap_s=IDLE_MS / 1000 + 5)
    t.eq(b.speaker.unheard, 0, "every frame heard: on before the first one")
    t.eq(len(b.speaker.replies[0]), 6, "the whole reply played")
    t.eq(fe.amp_turned_on(), 1, "one switch-on for the reply, none between its sentences")
    b.clock.warp(IDLE_MS / 1000 - 2)
    await _settle()
    t.eq(fe.amp_on(), True, "still on a little after the reply: the next one would not click")
    b.clock.warp(3)
    await _settle()
    t.eq(fe.amp_on(), False, "off once the output has idled")
    await _reply(b, talk, 1)
    t.eq(b.speaker.unheard, 0, "the next reply's first frame is heard")
    t.eq(len(b.speaker.replies), 2)
    t.eq(fe.amp_turned_on(), 2, "on again for it")
    t.eq(fe.amp_unclocked(), 0, "never on without the I2S clock")


async def test_replies_close_together_keep_the_amplifier_on():
    b, talk, _ = _device()
    await _reply(b, talk, 1)
    b.clock.warp(IDLE_MS / 1000 / 2)   # the child answers, the next reply comes
    await _settle()
    await _reply(b, talk, 1)
    t.eq(b.frontend.amp_turned_on(), 1, "no click between the two replies")


async def test_a_lesson_holds_the_amplifier_while_it_plays_and_a_reply_in_it_too():
    sd = t.tmpdir("ampsd")
    with open(MP3, "rb") as src, open(sd + "/lesson1.mp3", "wb") as dst:
        dst.write(src.read())
    b, talk, player = _device(sd)
    fe = b.frontend
    player.play("lesson1.mp3", repeat=20)   # 20 passes of 1.5 s: twice IDLE_MS
    await _settle()
    t.eq(fe.amp_on(), True, "on for the lesson")
    for _ in range(12):                     # 18 s of the lesson, pass after pass
        b.clock.warp(1.5)
        await _settle()
    t.eq((player.state, fe.amp_on()), ("playing", True), "on through the passes")
    await _reply(b, talk, 1)                # a reply pauses the lesson, which resumes after
    t.eq((player.state, fe.amp_on()), ("playing", True), "the lesson goes on, heard")
    t.eq(b.speaker.unheard, 0, "the reply heard")
    while player.state == "playing":        # the interrupted lesson finishes its pass
        b.clock.warp(1.5)
        await _settle()
    b.clock.warp(IDLE_MS / 1000 + 1)
    await _settle()
    t.eq(fe.amp_on(), False, "off after the lesson")
    t.eq(fe.amp_turned_on(), 1, "one switch-on for lesson and reply")
