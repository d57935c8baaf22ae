"""Turn-taking: how long the end-of-turn detector waits, and how often it cuts a child off.

Each utterance is two to four Piper phrases joined by pauses of 150-450 ms
(the commas and breaths inside one sentence), with a faint room-noise
floor, sent through the device's Opus encoder and the server's decoder
60 ms at a time into the real `EndOfTurnDetector` on silero, as the
listener does. A false cut-off is an end of turn decided inside the
utterance; the decision delay is the silence between the last spoken
sample and the decision. A few other silence settings are run beside the
configured one, to show the trade-off.
"""
import random

import numpy as np

from xiaozhi_server import config as configmod
from xiaozhi_server.pipeline.opus import OpusDecoder
from xiaozhi_server.pipeline.turn import EndOfTurnDetector
from xiaozhi_server.providers import create

from .device import opus_frames
from .report import Figure, percentile
from .speech import say, silence

PHRASES = (
    "I went to the park", "with my big sister", "and we saw a dog", "it was very fluffy",
    "then it started to rain", "so we ran home", "my favourite colour is blue", "because it is like the sky",
    "can we read a book", "about dinosaurs", "I like the green one", "that eats leaves",
    "tomorrow is my birthday", "and I will be six", "we will have a cake", "with seven candles",
)
PAUSE_MS = (150, 450)
LEAD_MS, TAIL_MS = 500, 1500
NOISE_RMS = 40.0
SEED = 20240601
SWEEP_MS = (200, 500)


class PausedUtterance:
    """Decoded 60 ms frames the server would hear, and where the words end (ms)."""

    def __init__(self, frames, end_ms, pauses, gaps):
        self.frames = frames
        self.end_ms = end_ms
        self.pauses = pauses
        self.gaps = gaps          # (start_ms, end_ms) of each pause in the stream


def build(count, rng):
    phrases = PHRASES if count >= 8 else PHRASES[:6]
    out = []
    for _ in range(count):
        parts = rng.sample(phrases, rng.randint(2, 4))
        pauses = [rng.randint(*PAUSE_MS) for _ in parts[1:]]
        pcm = bytearray(silence(LEAD_MS))
        gaps = []
        for i, text in enumerate(parts):
            if i:
                gaps.append((len(pcm) // 32, len(pcm) // 32 + pauses[i - 1]))
                pcm += silence(pauses[i - 1])
            pcm += say(text)
        end_ms = len(pcm) // 32
        pcm += silence(TAIL_MS)
        noise = np.random.default_rng(rng.randint(0, 2 ** 31)).standard_normal(len(pcm) // 2) * NOISE_RMS
        x = np.clip(np.frombuffer(bytes(pcm), dtype="<i2") + noise, -32768, 32767).astype("<i2")
        dec = OpusDecoder()
        frames = [dec.decode(p) for p in opus_frames(x.tobytes())]
        out.append(PausedUtterance(frames, end_ms, pauses, gaps))
    return out


def _cutting_pauses(u, ends):
    """Lengths of the pauses in which an end of turn was decided."""
    out = []
    for a, b in u.gaps:
        # The decision lands in the pause, or just after it (the VAD lags a window or two).
        if any(a <= at < b + 120 for at in ends):
            out.append(b - a)
    return out


def judge(utterances, vad, threshold, silence_ms):
    """(cut-off utterances, decision delays of the others, never ended, lengths of the pauses that cut)."""
    cutoffs, delays, missed, cutting = 0, [], 0, []
    for u in utterances:
        det = EndOfTurnDetector(vad.open(), threshold=threshold, silence_ms=silence_ms)
        ends = []
        for f in u.frames:
            ends += [e.at_ms for e in det.feed_sync(f) if e.kind == "end"]
        if any(at < u.end_ms for at in ends):
            cutoffs += 1
            cutting += _cutting_pauses(u, ends)
        elif ends:
            delays.append(ends[0] - u.end_ms)
        else:
            missed += 1
    return cutoffs, delays, missed, cutting


def run_turns(count=24):
    rng = random.Random(SEED)
    utterances = build(count, rng)
    vcfg = configmod.DEFAULTS["vad"]
    vad = create("vad", vcfg)
    threshold, configured = vcfg.get("threshold", 0.5), vcfg.get("silence_ms", 300)
    commit = vcfg.get("commit_silence_ms", configured)
    pauses = [p for u in utterances for p in u.pauses]
    figures = []
    # The configured silence ends a turn speculatively (the reply is prepared);
    # the child is cut off only by a pause longer than commit_silence_ms, when
    # the prepared reply becomes audible. Both are shown, and a sweep beside them.
    runs = [(configured, "silence_ms=%d (speculative end: reply prepared)" % configured, "delay")]
    if commit != configured:
        runs.append((commit, "commit_silence_ms=%d (reply heard)" % commit, "cutoff"))
    runs += [(s, "silence_ms=%d" % s, None) for s in SWEEP_MS if s not in (configured, commit)]
    for silence_ms, tag, target in runs:
        cut, delays, missed, cutting = judge(utterances, vad, threshold, silence_ms)
        rate = 100.0 * cut / len(utterances)
        figures.append(Figure("end-of-turn delay p50, " + tag, percentile(delays, 50), "ms",
                              limit=300.0 if target == "delay" else None, better="le",
                              note=("%d utterances, %d pauses of %d-%d ms" % (len(utterances), len(pauses),
                                                                              min(pauses), max(pauses)))
                              if target == "delay" else ""))
        figures.append(Figure("end-of-turn delay p95, " + tag, percentile(delays, 95), "ms"))
        what = ("%d of %d cut inside%s" % (cut, len(utterances), ", %d never ended" % missed if missed else ""))
        if target == "delay" and commit != configured:
            what += "; prepared only, joined when the child goes on"
        figures.append(Figure("false cut-offs, " + tag, rate, "%",
                              limit=5.0 if (target == "cutoff" or (target == "delay" and commit == configured))
                              else None, note=what))
        if cutting:
            figures.append(Figure("  shortest pause that cut, " + tag, float(min(cutting)), "ms",
                                  note="pauses this long end the turn"))
    return figures
