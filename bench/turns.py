"""Turn-taking: how long the end of a turn takes, and how often a child is cut off.

Each utterance is two to four Piper phrases joined by pauses of 150-450 ms
(the commas and breaths inside one sentence), with a faint room-noise
floor, sent through the device's Opus encoder and the server's decoder
60 ms at a time into the real `EndOfTurnDetector` on silero, as the
listener does. The listener's rules are then replayed window by window:

- after `silence_ms` the turn ends speculatively: the words so far go to
  ASR (the real Whisper here) and, unless they end on "and" or a comma, a
  reply is prepared; each such end inside an utterance is work done for
  nothing;
- the reply is heard once the silence has lasted as long as the words ask
  (pipeline/turn_words.py), and never while a voice may be starting again;
  a reply heard before the last spoken sample is a false cut-off.

ASR is taken as instant against the audio (the listener waits for the
words before committing, so a slower ASR only commits later). The rule
the words choose runs beside one fixed commit silence for every text, and
both also run on slow speakers, whose pauses last 500-1100 ms.
"""
import asyncio
import hashlib
import random

import numpy as np

from xiaozhi_server import config as configmod
from xiaozhi_server.pipeline.opus import OpusDecoder
from xiaozhi_server.pipeline.turn import EndOfTurnDetector
from xiaozhi_server.pipeline.turn_words import CommitSilence
from xiaozhi_server.providers import create

from .device import opus_frames
from .report import Figure, percentile
from .speech import say, silence

PHRASES = (
    "I went to the park", "with my big sister", "and we saw a dog", "it was very fluffy",
    "then it started to rain", "so we ran home", "my favourite colour is blue", "because it is like the sky",
    "can we read a book", "about dinosaurs", "I like the green one", "that eats leaves",
    "tomorrow is my birthday", "and I will be six", "we will have a cake", "with seven candles",
    # Children also stop on a joining word while they look for the next one.
    "we went to the shop and", "I like my dog because",
)
PAUSE_MS = (150, 450)
SLOW_PAUSE_MS = (500, 1100)
LEAD_MS, TAIL_MS = 500, 1500
NOISE_RMS = 40.0
SEED = 20240601
FIXED_COMMIT_MS = 700      # one silence for every turn, as the stock server shipped until mid-2025 (200 ms now)


class PausedUtterance:
    """Decoded 60 ms frames the server would hear, and where the words end (ms)."""

    def __init__(self, frames, end_ms, pauses):
        self.frames = frames
        self.end_ms = end_ms
        self.pauses = pauses


def build(count, rng, pause_ms=PAUSE_MS):
    phrases = PHRASES if count >= 8 else PHRASES[:6]
    out = []
    for _ in range(count):
        parts = rng.sample(phrases, rng.randint(2, 4))
        pauses = [rng.randint(*pause_ms) for _ in parts[1:]]
        pcm = bytearray(silence(LEAD_MS))
        for i, text in enumerate(parts):
            if i:
                pcm += silence(pauses[i - 1])
            pcm += say(text)
        end_ms = len(pcm) // 32
        pcm += silence(TAIL_MS)
        noise = np.random.default_rng(rng.randint(0, 2 ** 31)).standard_normal(len(pcm) // 2) * NOISE_RMS
        x = np.clip(np.frombuffer(bytes(pcm), dtype="<i2") + noise, -32768, 32767).astype("<i2")
        dec = OpusDecoder()
        frames = [dec.decode(p) for p in opus_frames(x.tobytes())]
        out.append(PausedUtterance(frames, end_ms, pauses))
    return out


class Words:
    """ASR of the words at each speculative end (real Whisper, cached by audio)."""

    def __init__(self, asr_cfg, language="en"):
        self.asr = create("asr", asr_cfg)
        self.language = language
        self.loop = asyncio.new_event_loop()
        self.cache = {}

    def of(self, pcm):
        key = hashlib.sha1(pcm).digest()
        if key not in self.cache:
            self.cache[key] = self.loop.run_until_complete(self.asr.transcribe(pcm, language=self.language))
        return self.cache[key]

    def close(self):
        self.loop.close()


class Replay:
    """One utterance through the listener's rules: speculative ends inside
    the words, and where the reply became audible."""

    def __init__(self, u, vad, threshold, silence_ms, commit, words):
        det = EndOfTurnDetector(vad.open(), threshold=threshold, silence_ms=silence_ms)
        self.inside = 0           # speculative ends before the last word (ASR dropped)
        self.prepared = 0         # of those, with a reply prepared (an LLM request dropped)
        self.decided = None       # first speculative end after the last word (ms after it)
        self.heard_at = None      # stream position where the reply became audible
        joined, tentative = b"", None     # tentative: (at_ms, wait_ms)
        for f in u.frames:
            events = det.feed_sync(f)
            for ev in events:
                if ev.kind == "start":
                    tentative = None          # the child went on: the words are joined
                elif ev.kind == "end":
                    joined += ev.audio
                    text = words.of(joined)
                    if ev.at_ms < u.end_ms:
                        self.inside += 1
                        self.prepared += commit.prepare_reply(text)
                    elif self.decided is None:
                        self.decided = ev.at_ms - u.end_ms
                    tentative = (ev.at_ms, commit.for_text(text) - silence_ms)
            if tentative and not any(ev.kind == "start" for ev in events):
                at, wait = tentative
                if det.position_ms - at >= wait and not det.onset:
                    self.heard_at = det.position_ms
                    break

    def cut_off(self, u):
        return self.heard_at is not None and self.heard_at < u.end_ms


def _rule_figures(label, replays, utterances, limit):
    cut = sum(1 for r, u in zip(replays, utterances) if r.cut_off(u))
    delays = [r.heard_at - u.end_ms for r, u in zip(replays, utterances)
              if r.heard_at is not None and not r.cut_off(u)]
    rate = 100.0 * cut / len(utterances)
    return [
        Figure("reply heard after the last word p50, " + label, percentile(delays, 50), "ms"),
        Figure("false cut-offs, " + label, rate, "%", limit=limit,
               note="%d of %d cut inside" % (cut, len(utterances))),
    ]


def run_turns(count=24):
    rng = random.Random(SEED)
    utterances = build(count, rng)
    slow = build(max(4, count // 2), rng, SLOW_PAUSE_MS)
    vcfg = configmod.VadConfig()
    vad = create("vad", configmod.DEFAULTS["vad"])
    threshold, silence_ms = vcfg.threshold, vcfg.silence_ms
    by_words = CommitSilence.from_config(vcfg, floor_ms=silence_ms)
    fixed = CommitSilence(max(silence_ms, FIXED_COMMIT_MS))
    words_label = "words choose (%d/%d/%d ms)" % (by_words.question_ms, by_words.default_ms,
                                                 by_words.unfinished_ms)
    fixed_label = "commit_silence_ms=%d for all words" % fixed.default_ms
    # A streaming recogniser whose passes agree lets a question be heard sooner
    # (commit_stable_question_ms); here every question counts as agreed on, the worst case.
    stable = CommitSilence(by_words.default_ms, by_words.stable_question_ms, by_words.unfinished_ms)
    stable_label = "words choose, a question its passes agree on at %d ms" % by_words.stable_question_ms
    words = Words(configmod.DEFAULTS["asr"])
    try:
        runs = {}
        for name, commit in (("words", by_words), ("fixed", fixed), ("stable", stable)):
            runs[name] = [Replay(u, vad, threshold, silence_ms, commit, words) for u in utterances]
            runs["slow " + name] = [Replay(u, vad, threshold, silence_ms, commit, words) for u in slow]
    finally:
        words.close()
    pauses = [p for u in utterances for p in u.pauses]
    spec = runs["words"]
    decided = [r.decided for r in spec if r.decided is not None]
    inside = sum(r.inside for r in spec)
    prepared = sum(r.prepared for r in spec)
    figures = [
        Figure("end-of-turn delay p50, silence_ms=%d (speculative end: ASR runs, reply prepared)" % silence_ms,
               percentile(decided, 50), "ms", limit=300.0, better="le",
               note="%d utterances, %d pauses of %d-%d ms" % (len(utterances), len(pauses), min(pauses),
                                                              max(pauses))),
        Figure("end-of-turn delay p95, silence_ms=%d" % silence_ms, percentile(decided, 95), "ms"),
        Figure("speculative ends inside an utterance", inside / len(utterances), "per utterance",
               note="%d of %d pauses: ASR run, then dropped" % (inside, len(pauses))),
        Figure("  replies prepared and dropped (LLM requests)", prepared / len(utterances), "per utterance",
               note="none after words that go on (\"and\", a comma)"),
    ]
    figures += _rule_figures(words_label, runs["words"], utterances, 5.0)
    figures += _rule_figures(fixed_label, runs["fixed"], utterances, None)
    figures += _rule_figures(stable_label, runs["stable"], utterances, 5.0)
    slow_pauses = [p for u in slow for p in u.pauses]
    for name, label in (("slow words", words_label), ("slow fixed", fixed_label), ("slow stable", stable_label)):
        cut = sum(1 for r, u in zip(runs[name], slow) if r.cut_off(u))
        figures.append(Figure("slow speaker false cut-offs, " + label, 100.0 * cut / len(slow), "%",
                              note="%d of %d utterances, pauses of %d-%d ms" % (
                                  cut, len(slow), min(slow_pauses), max(slow_pauses))))
    return figures
