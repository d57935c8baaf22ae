"""The listener with a streaming ASR: the real silero VAD on Opus-coded
speech, and testkit's FunASR server speaking the runtime's WebSocket
protocol. The utterance is streamed from the VAD's turn start while the
child speaks; the final text is taken at the end of the turn; a stream no
longer wanted (the child went on, a wake word, the session's end) has its
connection closed. A batch engine that crashes gives a failed utterance
(the session's could-not-hear line), not silence."""
import asyncio

import opuslib
import pytest

from testkit import audio
from testkit.control_api import eventually
from testkit.fake_funasr import FakeFunAsr
from xiaozhi_server.config import VadConfig
from xiaozhi_server.pipeline.asr import Transcriber
from xiaozhi_server.pipeline.listener import Listener
from xiaozhi_server.providers import create

WAIT = 30   # bound on a wait for an event (a busy machine), never a figure


@pytest.fixture(scope="module")
def vad():
    return create("vad", {"type": "silero"})


@pytest.fixture(scope="module")
def speech():
    first = audio.speech("Hello my friend how are you today", rate=16000)
    return first, audio.speech("and what is your favourite animal", rate=16000)


@pytest.fixture
def funasr():
    with FakeFunAsr() as server:
        yield server


class Heard:
    """The listener's outputs, as events a test can wait on."""

    def __init__(self):
        self.utterances = []
        self.got = asyncio.Event()
        self.starts = 0

    async def on_start(self):
        self.starts += 1

    async def on_utterance(self, utt):
        self.utterances.append(utt)
        self.got.set()


def listener(vad, funasr, heard, **vad_config):
    # A commit silence the test does not name waits commit_silence_ms: only the ones it names are sooner.
    wait = vad_config.setdefault("commit_silence_ms", VadConfig().commit_silence_ms)
    vad_config.setdefault("commit_question_ms", wait)
    vad_config.setdefault("commit_unfinished_ms", wait)
    vad_config.setdefault("commit_stable_question_ms", vad_config["commit_question_ms"])
    # These tests follow the final text; the reply started on the streaming
    # words before it has tests of its own (test_early_reply.py).
    vad_config.setdefault("early_reply", False)
    asr = create("asr", {"type": "funasr", "url": funasr.url, "connect_timeout": WAIT, "final_timeout": WAIT})
    lis = Listener(vad, Transcriber(asr, language="zh"), heard.on_start, heard.on_utterance,
                   vad_config=VadConfig(**vad_config))
    lis.start("auto")
    return lis


def frames(pcm):
    enc = opuslib.Encoder(16000, 1, opuslib.APPLICATION_VOIP)
    return [enc.encode(pcm[i:i + 1920], 960) for i in range(0, len(pcm) - 1919, 1920)]


async def say(lis, pcm):
    """Frames as a device sends them, each batch judged before the next (a
    queue of 200 frames at most, as in the session)."""
    for f in frames(pcm):
        lis.push(f)
        if len(lis._frames) > 100:
            await eventually(lambda: len(lis._frames) < 50, WAIT, 0.01)


async def closed(conn):
    assert await asyncio.to_thread(conn.closed.wait, WAIT), "the ASR connection was left open"


async def test_the_utterance_streams_while_the_child_speaks(vad, funasr, speech):
    funasr.say("你好我的朋友你", "你好，我的朋友，你今天好吗？")
    heard = Heard()
    lis = listener(vad, funasr, heard)
    await say(lis, speech[0][:64000])   # 2 s of words, the quiet at its end left for later
    # The child is still speaking (no silence sent yet): the words are on the wire.
    await eventually(lambda: funasr.connections and len(funasr.connections[0].audio) >= 19200
                     and lis.partial, WAIT)
    conn = funasr.connections[0]
    assert not conn.ended and lis.partial.startswith("你好") and heard.starts == 1 and lis.resumed == 0
    await say(lis, audio.silence(1200))
    await asyncio.wait_for(heard.got.wait(), WAIT)
    utt, = heard.utterances
    assert utt.text == "你好，我的朋友，你今天好吗？" and utt.failed is None
    assert utt.commit.done() and utt.commit.result()
    # Everything the VAD kept (its pre-roll before the start included) went to the service.
    assert conn.ended and len(conn.audio) == utt.audio_ms * 32
    assert len(funasr.connections) == 1
    await closed(conn)
    await lis.close()


async def test_a_child_who_goes_on_gets_a_new_stream_and_no_connection_stays_open(vad, funasr, speech):
    funasr.hold_finals()   # the pause ends before the first words' final text is in
    funasr.say("你好我的", "你好，我的朋友。").say("你好我的朋友还有", "你好，我的朋友，你最喜欢什么动物？")
    heard = Heard()
    # Only a question's words are committed soon: nothing else is while the
    # test waits (the device sends no audio then, and the clock would commit).
    lis = listener(vad, funasr, heard, commit_silence_ms=60000, commit_question_ms=300)
    await say(lis, speech[0])   # espeak ends it with ~0.4 s of quiet: a pause, not an end
    await eventually(lambda: funasr.connections and funasr.connections[0].ended, WAIT)
    await say(lis, speech[1])
    await eventually(lambda: len(funasr.connections) == 2 and len(funasr.connections[1].audio)
                     > len(funasr.connections[0].audio), WAIT)
    # The first stream was dropped when the child went on, before its words came: its connection is closed.
    await closed(funasr.connections[0])
    funasr.release_finals()
    await say(lis, audio.silence(1200))
    await asyncio.wait_for(heard.got.wait(), WAIT)
    utt, = heard.utterances
    assert utt.text == "你好，我的朋友，你最喜欢什么动物？" and lis.resumed == 1
    second = funasr.connections[1]
    # The joined utterance, the earlier words' audio first, went to the new stream whole.
    assert len(second.audio) == utt.audio_ms * 32
    assert bytes(second.audio[:len(funasr.connections[0].audio)]) == bytes(funasr.connections[0].audio)
    await closed(second)
    await lis.close()


async def test_a_wake_word_and_the_session_end_close_the_stream(vad, funasr, speech):
    heard = Heard()
    lis = listener(vad, funasr, heard)
    await say(lis, speech[0][:32000])
    await eventually(lambda: funasr.connections and funasr.connections[0].audio, WAIT)
    lis.drop_pending()          # the device says those words were its wake word
    await closed(funasr.connections[0])
    await say(lis, audio.silence(300) + speech[1][:32000])
    await eventually(lambda: len(funasr.connections) == 2 and funasr.connections[1].audio, WAIT)
    await lis.close()           # the device went away mid-sentence
    await closed(funasr.connections[1])
    assert heard.utterances == [] and not any(c.ended for c in funasr.connections)


async def test_partial_words_choose_the_commit_before_the_final_text(vad, funasr, speech):
    """A question heard in the streaming words is committed after the
    question's silence even while the final text is still coming."""
    funasr.hold_finals()
    funasr.say("好吗好吗好吗", "你好吗？你好吗？")   # every streaming piece ends in 吗
    heard = Heard()
    lis = listener(vad, funasr, heard, commit_question_ms=300, commit_silence_ms=5000)
    await say(lis, speech[0][:64000])
    await eventually(lambda: lis.partial.endswith("吗"), WAIT)
    await say(lis, audio.silence(1200))
    await eventually(lambda: funasr.connections[0].ended and lis._tentative is None, WAIT)
    assert heard.utterances == [], "no words before the final text"
    funasr.release_finals()
    await asyncio.wait_for(heard.got.wait(), WAIT)
    utt, = heard.utterances
    assert utt.text == "你好吗？你好吗？" and utt.commit.result() is True
    await lis.close()


async def test_push_to_talk_streams_the_press_and_finishes_at_listen_stop(vad, funasr, speech):
    funasr.say("你好我的朋友", "你好，我的朋友，你最喜欢什么动物？")
    heard = Heard()
    lis = listener(vad, funasr, heard)
    lis.start("manual")
    await say(lis, speech[0] + speech[1])   # a pause inside: push to talk does not end on it
    await eventually(lambda: funasr.connections and len(funasr.connections[0].audio) >= 4 * 32000, WAIT)
    conn = funasr.connections[0]
    assert not conn.ended and heard.utterances == []
    await lis.stop()                        # the button is released
    await asyncio.wait_for(heard.got.wait(), WAIT)
    utt, = heard.utterances
    assert utt.text == "你好，我的朋友，你最喜欢什么动物？" and utt.commit is None
    assert conn.ended and len(conn.audio) == utt.audio_ms * 32 and len(funasr.connections) == 1
    await closed(conn)
    await lis.close()


class CrashingEngine:
    """An in-process recognizer whose engine fails (a batch provider, like Whisper)."""

    async def transcribe(self, pcm, language=None):
        raise RuntimeError("engine crashed")


async def test_a_crashing_batch_engine_gives_a_failed_utterance_not_silence(vad, speech):
    heard = Heard()
    lis = Listener(vad, Transcriber(CrashingEngine()), heard.on_start, heard.on_utterance)
    lis.start("auto")
    await say(lis, speech[0] + audio.silence(1200))
    await asyncio.wait_for(heard.got.wait(), WAIT)
    utt, = heard.utterances
    assert utt.failed == "crashed" and utt.text == "" and utt.commit.result() is True
    await lis.close()


@pytest.mark.parametrize("streamed, agreed", [("天空为什么是蓝色的", True), ("天空为什么是蓝色", False)])
async def test_a_question_both_passes_agree_on_is_heard_sooner(vad, funasr, speech, streamed, agreed):
    """The streaming pass said the words the final pass says: the question
    needs only commit_stable_question_ms of silence. When the final pass
    rewrote them (here it heard one more character) the question waits its
    usual silence (60 s here: the test would see it)."""
    funasr.hold_finals()
    funasr.say(streamed, "天空为什么是蓝色的？")
    heard = Heard()
    lis = listener(vad, funasr, heard, commit_question_ms=60000, commit_stable_question_ms=300,
                   commit_silence_ms=60000)
    await say(lis, speech[0][:64000] + audio.silence(1200))
    await eventually(lambda: funasr.connections and funasr.connections[0].ended and lis.partial == ""
                     and lis._tentative is not None and lis._tentative.stream.partial == streamed, WAIT)
    funasr.release_finals()
    await asyncio.wait_for(heard.got.wait(), WAIT)
    utt, = heard.utterances
    assert utt.text == "天空为什么是蓝色的？"
    assert utt.commit.done() is agreed   # 1 s of silence was heard after the end: enough only if agreed
    await lis.close()
