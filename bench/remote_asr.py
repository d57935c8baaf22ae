"""One child, two recognizers: a remote streaming ASR against Whisper in
this process, end of speech to the first reply frame at the device.

The remote one is testkit's FunASR runtime server (bench/funasr_process.py,
a process of its own) in 2pass mode: the server streams the utterance to
it from the VAD's turn start, and its final text comes 80 ms after the
end of speech (the offline pass of a real server on a short utterance).
Whisper base (int8) decodes the whole utterance after the turn's
speculative end, as the embedded default does. Everything else is the
same: the real silero VAD and listener, the scripted model at once, an
instant tone for TTS (so the figure is the hearing side's), a device
speaking a 3 s question in real time.

Each recognizer runs twice: with the words rule (the question's 500 ms
of silence before a reply may be heard, docs/server.md) and with the
commit at the speculative end (160 ms), which shows what the recognizer
itself adds.
"""
from .device import Utterance, take_turns
from .fakes import ToneTts
from .funasr_process import FunAsrProcess
from .latency import SETTLE_S
from .llm_process import LlmProcess
from .report import Figure, ms, percentile
from .rig import BenchServer, bench_config
from .speech import say

QUESTION = "Can you tell me a short story about a little cat who likes to play?"
ANSWER = "😊 Yes, I can."
FINAL_DELAY_S = 0.08
ONE_CHILD_TARGET_S = 0.45    # one child with a streaming ASR: end of speech -> first audio, p50
RULES = (("words rule", {}),
         ("commit at the speculative end", {"commit_silence_ms": 160, "commit_question_ms": 160,
                                            "commit_unfinished_ms": 160}))


async def _turns(cfg, utt, turns, warm):
    async with BenchServer(cfg, tts=ToneTts(ms=300)) as srv:
        await warm(srv)
        times, heard = await take_turns(srv.url, "bench:remote-asr", utt, turns, SETTLE_S)
        marks = srv.services.turn_marks()
    first = [t.first_audio - t.speech_end for t in times if t.first_audio is not None]
    asr = [ms(m["heard"] - m["ended"]) for m in marks if m.get("heard") and m.get("ended")]
    return first, asr, heard


async def run_remote_asr(turns=3):
    pcm = say(QUESTION)
    utt = Utterance(pcm)

    async def warm_whisper(srv):
        await srv.services.asr.transcribe(pcm, language="en")   # loads and runs Whisper once

    async def warm_nothing(_srv):
        pass

    figures = []
    with LlmProcess(ANSWER) as llm, FunAsrProcess(QUESTION, final_delay_s=FINAL_DELAY_S) as funasr:
        recognizers = (("streaming FunASR fake (final +80 ms)", funasr.config(), warm_nothing),
                       ("Whisper base in-process", None, warm_whisper))
        for name, asr_cfg, warm in recognizers:
            for rule, vad in RULES:
                cfg = bench_config(llm.base_url)
                if asr_cfg is not None:
                    cfg["asr"] = dict(asr_cfg)
                cfg["vad"] = dict(cfg["vad"], **vad)
                first, asr, heard = await _turns(cfg, utt, turns, warm)
                target = ONE_CHILD_TARGET_S if asr_cfg is not None and not vad else None
                figures += [
                    Figure("%s, %s: first audio p50" % (name, rule), percentile(first, 50), "s",
                           limit=target, better="le",
                           note="end of speech -> first reply frame at the device, %d turns of a %.1f s question"
                           % (len(first), len(pcm) / 32000)),
                    Figure("  ASR: turn decided -> words p50", percentile(asr, 50), "ms",
                           note="heard: %r" % (heard[-1] if heard else "")),
                ]
    return figures
