# Run by test_audio_modes.py on the unix port of `make micropython`: starts
# xzaudio's engine with the wiring given as JSON in argv[1], reads FRAMES
# mic packets and writes them decoded (16 kHz s16le) to argv[2], then says
# a wake word while the speaker plays and reports whether the speech
# engine heard it. One JSON line of results on stdout.
import json
import os
import sys

import asyncio
import audio
import xzaudio

FRAMES = 12


async def _speak_and_listen(sp):
    out = audio.AudioOut(24000)
    enc = audio.Encoder(24000, 60)
    pcm = bytearray(1440 * 2)
    for i in range(0, len(pcm), 2):
        pcm[i + 1] = 0x10 if (i // 2) % 60 < 30 else 0xF0
    pkt = bytearray(xzaudio.MAX_PACKET)
    n = enc.encode(pcm, pkt)
    speaking = [True]

    async def speak():
        while speaking[0]:
            await out.play_wait(memoryview(pkt)[:n])
            await asyncio.sleep_ms(20)
    task = asyncio.create_task(speak())
    while not os.stat(os.getenv("XZAUDIO_SPK"))[6]:
        await asyncio.sleep_ms(10)
    before = sp.stats()
    with open(os.getenv("XZAUDIO_SPEECH"), "a") as f:
        f.write("wake 0.9\n")
    heard = None
    for _ in range(500):
        ev = sp.event()
        if ev is not None:
            heard = True
            break
        if sp.stats()[2] > before[2]:
            heard = False
            break
        await asyncio.sleep_ms(10)
    speaking[0] = False
    await task
    return heard


async def main(wiring, out_path):
    xzaudio.start(**wiring)
    mic = audio.AudioIn(16000, 60)
    mic.start()
    dec = audio.Decoder(16000)
    buf = bytearray(xzaudio.MAX_PACKET)
    pcm = bytearray(960 * 2)
    with open(out_path, "wb") as f:
        for _ in range(FRAMES):
            n = await mic.read_packet(buf)
            m = dec.decode(memoryview(buf)[:n], pcm)
            f.write(memoryview(pcm)[:m])
    mic.stop()
    sp = xzaudio.Speech()
    sp.start("cn")
    res = {"aec": sp.aec(), "models": list(sp.models())}
    res["heard_while_speaking"] = await _speak_and_listen(sp)
    print(json.dumps(res))


asyncio.run(main(json.loads(sys.argv[1]), sys.argv[2]))
