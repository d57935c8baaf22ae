"""End of speech -> first reply audio, with providers that cost nothing or sleep like cloud ones.

`latency`: ASR, LLM and TTS answer at once (the LLM is the scripted
OpenAI-compatible server over loopback HTTP, the only fake allowed for the
model), so what is left between the end-of-turn decision and the first
Opus frame leaving the server is the pipeline's own overhead. Turns are
sent faster than real time; the figure comes from the session's turn log.

`cloud`: ASR final after 0.1 s, LLM first token after 0.4 s, TTS first
audio after 0.1 s, the real silero end-of-turn detector, and devices that
speak in real time. The figure is what a user experiences: from the last
spoken sample to the first reply frame arriving at the device.
"""
import asyncio

from .device import Utterance, open_device, take_turn
from .fakes import ScriptedAsr, ToneTts
from .llm_process import LlmProcess
from .report import Figure, ms, percentile
from .rig import BenchServer, bench_config
from .speech import say

QUESTION = "Can you tell me a story about a cat?"
ANSWER = "😊 Sure, here is a short story about a cat."
SETTLE_S = 0.3
CLOUD_ASR_S, CLOUD_LLM_S, CLOUD_TTS_S = 0.1, 0.4, 0.1


def _stage_split(marks):
    rows = {"asr": [], "llm": [], "tts": [], "total": [], "pipeline": []}
    for m in marks:
        if m.get("ended") is None or m.get("first_audio") is None or "first_text" not in m:
            continue
        rows["asr"].append(ms(m["heard"] - m["ended"]))
        rows["llm"].append(ms(m["first_text"] - m["heard"]))
        rows["tts"].append(ms(m["first_audio"] - m["first_text"]))
        rows["total"].append(ms(m["first_audio"] - m["ended"]))
        # The model's share is its HTTP round trip; everything else is the pipeline's.
        rows["pipeline"].append(rows["total"][-1] - rows["llm"][-1])
    return rows


def _decision_delays(sessions, results):
    """Per turn, the time from the last spoken sample to the server's end-of-turn decision.
    Device and server share this process's monotonic clock."""
    out = []
    by_device = {s.device_id: s for s in sessions}
    for i, times in enumerate(results):
        session = by_device.get("bench:cloud-%d" % i)
        marks = [m for m in session.turn_log if m.get("ended") is not None] if session else []
        if len(marks) != len(times):
            continue  # a lost turn: the pairing of turns would be a guess
        out += [ms(m["ended"] - t.speech_end) for m, t in zip(marks, times)]
    return out


async def _device_turns(url, utt, turns, name, realtime, stagger_s=0.0, warm_up=0):
    await asyncio.sleep(stagger_s)
    dev = await open_device(url, name)
    try:
        out = []
        for _ in range(warm_up + turns):
            out.append(await take_turn(dev, utt, realtime=realtime))
        # The server logs a turn just after its tts stop: let it, before hanging up.
        await asyncio.sleep(SETTLE_S)
        return out[warm_up:]
    finally:
        await dev.close()


async def run_latency(turns=50):
    utt = Utterance(say(QUESTION))
    with LlmProcess(ANSWER) as llm:
        cfg = bench_config(llm.base_url)
        # Turns go out faster than real time: the per-connection audio rate
        # limit (50 frames/s) would drop the silence that ends them.
        cfg["limits"].update(ws_binary_per_s=2000, ws_binary_burst=2000)
        async with BenchServer(cfg, asr=ScriptedAsr(QUESTION),
                               tts=ToneTts(ms=120)) as srv:
            # One turn first: the HTTP client and the codecs warm up outside the figures.
            await _device_turns(srv.url, utt, turns, "bench:latency", realtime=False, warm_up=1)
            rows = _stage_split(srv.services.turn_marks()[1:])
    n = len(rows["total"])
    note = "%d turns; end-of-turn decision -> first Opus frame sent" % n
    return [
        Figure("pipeline overhead p50", percentile(rows["pipeline"], 50), "ms", note=note),
        Figure("pipeline overhead p95", percentile(rows["pipeline"], 95), "ms", limit=15.0,
               note="instant ASR/TTS; the model's HTTP round trip left out"),
        Figure("decision -> first frame, all in, p50", percentile(rows["total"], 50), "ms",
               note="model round trip included"),
        Figure("decision -> first frame, all in, p95", percentile(rows["total"], 95), "ms"),
        Figure("  decision -> stt sent (ASR hop) p50", percentile(rows["asr"], 50), "ms"),
        Figure("  stt -> first LLM text (loopback HTTP) p50", percentile(rows["llm"], 50), "ms"),
        Figure("  first text -> first frame (TTS+encode) p50", percentile(rows["tts"], 50), "ms"),
    ]


async def run_cloud(devices=4, turns_per_device=5):
    utt = Utterance(say(QUESTION))
    with LlmProcess(ANSWER, first_token_delay=CLOUD_LLM_S) as llm:
        async with BenchServer(bench_config(llm.base_url), asr=ScriptedAsr(QUESTION, delay=CLOUD_ASR_S),
                               tts=ToneTts(ms=300, delay=CLOUD_TTS_S)) as srv:
            # Devices start a fraction of a turn apart, so their turns do not line up.
            results = await asyncio.gather(*[
                _device_turns(srv.url, utt, turns_per_device, "bench:cloud-%d" % i, True, i * 0.7)
                for i in range(devices)])
            server_rows = _stage_split(srv.services.turn_marks())
    heard = [ms(t.first_audio - t.speech_end) for r in results for t in r if t.first_audio is not None]
    lost = sum(1 for r in results for t in r if t.first_audio is None)
    decided = _decision_delays(srv.services.seen, results)
    note = "%d turns on %d devices in real time%s" % (len(heard), devices, ", %d lost" % lost if lost else "")
    return [
        Figure("end of speech -> first audio p50", percentile(heard, 50) / 1000, "s", limit=0.9, better="le",
               note=note),
        Figure("end of speech -> first audio p90", percentile(heard, 90) / 1000, "s", limit=1.2, better="le",
               note="measured at the device"),
        Figure("  of which providers (sleeps)", (CLOUD_ASR_S + CLOUD_LLM_S + CLOUD_TTS_S), "s",
               note="ASR %.1f + LLM %.1f + TTS %.1f" % (CLOUD_ASR_S, CLOUD_LLM_S, CLOUD_TTS_S)),
        Figure("  end of speech -> turn decided (VAD) p50", percentile(decided, 50), "ms",
               note="silence the detector waited for"),
        Figure("  end-of-turn decision -> first frame p50", percentile(server_rows["total"], 50), "ms",
               note="server side"),
    ]
