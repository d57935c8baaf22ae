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

Each recognizer runs twice: with the words rule (a question both passes
agree on may be heard after 400 ms of silence, docs/server.md) and with
the commit at the speculative end (160 ms), which shows what the
recognizer itself adds. The streaming one also runs with the early reply
off (vad.early_reply: the reply waits for the final text), and both ways
again with a model whose first token comes LLM_DELAY_S after the request
(a cloud model's), where starting on the streaming words can pay; each
streaming row counts its early starts and those dropped unheard (wasted).
`asr="funasr"` runs the streaming rows only.
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
LLM_DELAY_S = 0.3
ONE_CHILD_TARGET_S = 0.45    # one child with a streaming ASR: end of speech -> first audio, p50
WORDS_RULE = {}
NO_EARLY = {"early_reply": False}
AT_THE_END = {"commit_silence_ms": 160, "commit_question_ms": 160, "commit_stable_question_ms": 160,
              "commit_unfinished_ms": 160}


async def _turns(cfg, utt, turns, warm):
    async with BenchServer(cfg, tts=ToneTts(ms=300)) as srv:
        await warm(srv)
        times, heard = await take_turns(srv.url, "bench:remote-asr", utt, turns, SETTLE_S)
        marks = srv.services.turn_marks()
        listeners = [s.listener for s in srv.services.seen if s.listener is not None]
        early = (sum(x.early_started for x in listeners), sum(x.early_wasted for x in listeners))
    first = [t.first_audio - t.speech_end for t in times if t.first_audio is not None]
    asr = [ms(m["heard"] - m["ended"]) for m in marks if m.get("heard") and m.get("ended")]
    return first, asr, heard, early


async def _rows(name, llm_url, asr_cfg, warm, rules, utt, turns, target_row=None):
    figures = []
    for rule, vad in rules:
        cfg = bench_config(llm_url)
        if asr_cfg is not None:
            cfg["asr"] = dict(asr_cfg)
        cfg["vad"] = dict(cfg["vad"], **vad)
        first, asr, heard, (started, wasted) = await _turns(cfg, utt, turns, warm)
        row = "%s, %s" % (name, rule)
        figures += [
            Figure("%s: first audio p50" % row, percentile(first, 50), "s",
                   limit=ONE_CHILD_TARGET_S if rule == target_row else None, better="le",
                   note="end of speech -> first reply frame at the device, %d turns of a %.1f s question"
                   % (len(first), utt.speech_ms / 1000)),
            Figure("  first audio p90", percentile(first, 90), "s"),
            Figure("  ASR: turn decided -> words p50", percentile(asr, 50), "ms",
                   note="heard: %r" % (heard[-1] if heard else "")),
        ]
        if asr_cfg is not None and vad.get("early_reply", True):
            figures.append(Figure("  early replies wasted (dropped unheard)", wasted, "",
                                  note="%d started, %d wasted, %d turns" % (started, wasted, len(first))))
    return figures


async def run_remote_asr(turns=3, asr=None):
    pcm = say(QUESTION)
    utt = Utterance(pcm)

    async def warm_whisper(srv):
        await srv.services.asr.transcribe(pcm, language="en")   # loads and runs Whisper once

    async def warm_nothing(_srv):
        pass

    streaming = "streaming FunASR fake (final +80 ms)"
    figures = []
    with FunAsrProcess(QUESTION, final_delay_s=FINAL_DELAY_S) as funasr:
        with LlmProcess(ANSWER) as llm:
            figures += await _rows(streaming, llm.base_url, funasr.config(), warm_nothing,
                                   (("words rule, early reply", WORDS_RULE),
                                    ("words rule, no early reply", NO_EARLY),
                                    ("commit at the speculative end", AT_THE_END)),
                                   utt, turns, target_row="words rule, early reply")
            if asr != "funasr":
                figures += await _rows("Whisper base in-process", llm.base_url, None, warm_whisper,
                                       (("words rule", WORDS_RULE), ("commit at the speculative end", AT_THE_END)),
                                       utt, turns)
        with LlmProcess(ANSWER, LLM_DELAY_S) as slow:
            figures += await _rows(streaming + ", LLM first token +%.0f ms" % (LLM_DELAY_S * 1000), slow.base_url,
                                   funasr.config(), warm_nothing,
                                   (("words rule, early reply", WORDS_RULE),
                                    ("words rule, no early reply", NO_EARLY)), utt, turns)
    return figures
