"""The offline chat model (issue 35): one child's first audio, and how many
children at once it carries, everything local.

Silero VAD, Whisper base, the local model (llm `local`, the 1.5B that
`make run` prepares, in its one host process) and the default local voices;
a device speaks each question in real time (Piper's voice, English: the
bench has no offline Chinese child voice to speak with). First audio =
end of the child's speech -> first reply frame at the device.

Then N children, each already in a conversation (one question asked and
answered), ask at the same moment, N = 1, 2, 3, ...: the largest N whose
slowest child still hears a first frame within 2.5 s is the knee; it goes
on past the knee until one child more than the host has slots. That child
shares a slot with another and first hears the short "let me think" line,
which counts as first audio here as it does for the child.
"""
import asyncio

from xiaozhi_server.providers.llm import local_model
from xiaozhi_server.providers.llm.local import BUSY_LINE

from .device import Utterance, open_device, take_turn
from .latency import SETTLE_S
from .report import Figure, percentile
from .rig import BenchServer, bench_config
from .speech import say

QUESTIONS = ("How many legs does a spider have?", "Why is the sky blue?", "What do cows eat?",
             "What color is a banana?", "Can fish breathe under water?", "What is two plus three?")
# What a child says -> the tool it asks for (None: words). Checked against the
# tools the bench's session really has; a case whose tool it lacks is left out.
DECISIONS = (("How many legs does a spider have?", None), ("Why is the sky blue?", None), ("恐龙吃什么？", None),
             ("天为什么是蓝色的？", None), ("月亮上有兔子吗？", None), ("Tell me a story about a cat.", None),
             ("Turn the volume up.", "self_audio_speaker_set_volume"),
             ("把声音调大一点", "self_audio_speaker_set_volume"), ("我们来聊天吧", "switch_app"),
             ("Let's translate.", "switch_app"), ("我想翻译", "switch_app"), ("我们来学英语吧", "switch_app"),
             ("Play lesson one three times.", "start_repeater"), ("My name is Lily.", "remember"),
             ("我叫小明，我六岁了。", "remember"), ("I like dinosaurs.", "remember"), ("Stop the music.", "self_mp3_stop"))
CONCURRENT_TARGET_S = 2.5
MAX_CHILDREN = 6


def _config():
    cfg = bench_config("http://127.0.0.1:9/v1")
    cfg["llm"] = {"type": "local"}
    return cfg


async def _ask(url, device_id, utts):
    """One device asks each question once: (first audio - end of speech) per answer heard."""
    dev = await open_device(url, device_id)
    try:
        out = []
        for utt in utts:
            t = await take_turn(dev, utt, reply_timeout=60.0)
            out.append(None if t.first_audio is None else t.first_audio - t.speech_end)
        await asyncio.sleep(SETTLE_S)
        return out, [m["text"] for _t, m in dev.json if m.get("type") in ("stt", "tts") and m.get("text")]
    finally:
        await dev.close()


async def _children_at_once(url, n, utts):
    """n children, each already in a conversation (a first question asked
    and answered, so the host has read each one's prompt head), ask at the
    same moment: (first audio per child, how many heard the short "let me
    think" line first)."""
    devs = [await open_device(url, "bench:llm-%d-%d" % (n, i)) for i in range(n)]
    try:
        for i, dev in enumerate(devs):
            await take_turn(dev, utts[(i + 1) % len(utts)], reply_timeout=120.0)
        await asyncio.sleep(SETTLE_S)
        marks = [len(dev.json) for dev in devs]
        turns = await asyncio.gather(*(take_turn(dev, utts[i % len(utts)], reply_timeout=120.0)
                                       for i, dev in enumerate(devs)))
        firsts = [None if t.first_audio is None else t.first_audio - t.speech_end for t in turns]
        waited = sum(any(m.get("type") == "tts" and str(m.get("text") or "").startswith(tuple(BUSY_LINE.values()))
                         for _t, m in dev.json[mark:]) for dev, mark in zip(devs, marks))
        return firsts, waited
    finally:
        for dev in devs:
            await dev.close()


async def _decisions(llm, session):
    """(right, asked, misses) over DECISIONS with the session's own tools and prompt."""
    tools = session.tools.declarations(session.dialogue.tool_policy)
    offered = {t["function"]["name"] for t in tools}
    right, asked, misses = 0, 0, []
    for words, want in DECISIONS:
        if want is not None and want not in offered:
            continue
        got = None
        async for ev in llm.stream_chat([{"role": "system", "content": session.dialogue.system_prompt},
                                         {"role": "user", "content": words}], tools):
            if ev.kind == "tool_call":
                got = ev.name
        asked += 1
        right += got == want
        if got != want:
            misses.append("%s -> %s" % (words, got or "words"))
    return right, asked, misses


async def run_local_llm(children=MAX_CHILDREN):
    if not local_model.installed():
        raise RuntimeError("the local model is not prepared: run `make run` once (tools/setup.sh llm)")
    utts = [Utterance(say(q)) for q in QUESTIONS]
    series = utts + utts      # each question twice: twelve turns for the one child's p50
    figures = []
    async with BenchServer(_config()) as srv:
        slots = srv.services.llm.slots
        await srv.services.asr.transcribe(say(QUESTIONS[0]), language="en")   # Whisper loads and runs once
        one, texts = await _ask(srv.url, "bench:llm-1", series)
        heard = [x for x in one if x is not None]
        note = "%d of %d questions answered; %s" % (len(heard), len(one), " | ".join(texts[-4:])[:200])
        marks = [m for m in srv.services.turn_marks() if m.get("first_text") and m.get("heard") and m.get("ended")]
        figures += [Figure("one child: first audio p50", percentile(heard, 50), "s", note=note),
                    Figure("one child: first audio p90", percentile(heard, 90), "s"),
                    Figure("  ASR: turn decided -> words p50", percentile([m["heard"] - m["ended"] for m in marks], 50),
                           "s", note="Whisper base"),
                    Figure("  LLM: words -> first text p50", percentile([m["first_text"] - m["heard"] for m in marks], 50),
                           "s", note="the tool decision, then the answer's first tokens"),
                    Figure("  first text -> first audio p50",
                           percentile([m["first_audio"] - m["first_text"] for m in marks if m.get("first_audio")], 50),
                           "s", note="the first sentence written to its end, spoken (Piper), sent")]
        right, asked, misses = await _decisions(srv.services.llm, srv.services.seen[0])
        figures.append(Figure("tool decisions right", right, "of %d" % asked,
                              note="; ".join(misses) or "the session's own tools and prompt"))
        knee = 0
        for n in range(1, children + 1):
            firsts, waited = await _children_at_once(srv.url, n, utts)
            worst = max(firsts) if all(f is not None for f in firsts) else None
            heard = [f for f in firsts if f is not None]
            figures.append(Figure("%d children at once: slowest first audio" % n, worst, "s",
                                  limit=CONCURRENT_TARGET_S, better="le",
                                  note=("p50 %.2f s; %d heard the short line first" % (percentile(heard, 50), waited))
                                  if heard else "no answer"))
            if worst is not None and worst <= CONCURRENT_TARGET_S and knee == n - 1:
                knee = n
            # Past the knee, on until one child more than the host has slots: that one waits
            # for a slot, and the figure shows whether it heard the short line first.
            if (worst is None or worst > CONCURRENT_TARGET_S) and n > slots:
                break
        figures.append(Figure("children served at once within %.1f s first audio" % CONCURRENT_TARGET_S, knee,
                              "", note="the host decodes %d turns at once (slots)" % slots))
    return figures
