"""The OpenAI-compatible TTS against the answers self-hosted `/v1/audio/speech`
servers really give: raw PCM at their own rate, WAV streamed with no length,
float or stereo WAV, WAV or MP3 whatever was asked, and an HTML error page
sent with status 200. The voice name picks the server's answer."""
import asyncio
import struct
import subprocess

import numpy as np
import pytest
from aiohttp import web

from testkit import audio
from testkit.local_net import serve
from xiaozhi_server.providers import create
from xiaozhi_server.providers.audio_decode import WavStream, sniff
from xiaozhi_server.providers.tts.base import TtsError

HZ = 330


def wav_bytes(rate, channels=1, float32=False, streamed=False, tail=b""):
    """A WAV file as servers write it; streamed = length fields 0xFFFFFFFF."""
    mono = np.frombuffer(audio.tone(HZ, 600, rate), dtype="<i2")
    frames = np.repeat(mono[:, None], channels, axis=1)
    data = (frames.astype("<f4") / 32768.0).tobytes() if float32 else frames.astype("<i2").tobytes()
    width = 4 if float32 else 2
    fmt = struct.pack("<HHIIHH", 3 if float32 else 1, channels, rate, rate * channels * width,
                      channels * width, width * 8)
    size = 0xFFFFFFFF if streamed else len(data)
    riff = 0xFFFFFFFF if streamed else 4 + 8 + len(fmt) + 8 + len(data) + len(tail)
    return (b"RIFF" + struct.pack("<I", riff) + b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
            + b"LIST" + struct.pack("<I", 4) + b"INFO"
            + b"data" + struct.pack("<I", size) + data + tail)


def mp3_bytes(rate):
    return subprocess.run(["lame", "--quiet", "-r", "-s", str(rate / 1000), "--bitwidth", "16", "--signed",
                           "--little-endian", "-m", "m", "-", "-"],
                          input=audio.tone(HZ, 600, rate), capture_output=True, check=True).stdout


def encoded(container, codec, rate):
    """A tone as servers encode it with ffmpeg (through PyAV): Ogg/Opus, FLAC, AAC in ADTS."""
    import io

    import av
    buf = io.BytesIO()
    with av.open(buf, "w", format=container) as out:
        stream = out.add_stream(codec, rate=rate, layout="mono")
        sample_format = stream.codec_context.format.name
        pcm = np.frombuffer(audio.tone(HZ, 600, rate), dtype="<i2")
        for i in range(0, len(pcm), 960):
            piece = pcm[i:i + 960][None, :]
            if sample_format.startswith("flt"):
                piece = (piece / 32768.0).astype(np.float32)
            frame = av.AudioFrame.from_ndarray(piece, format=sample_format, layout="mono")
            frame.sample_rate = rate
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return buf.getvalue()


ANSWERS = {
    "pcm22k": lambda: ("audio/pcm", audio.tone(HZ, 600, 22050)),
    "wav_streamed": lambda: ("audio/wav", wav_bytes(24000, streamed=True)),
    "wav_float_stereo": lambda: ("audio/wav", wav_bytes(44100, channels=2, float32=True, tail=b"id3 \x04\0\0\0abcd")),
    "wav_for_pcm": lambda: ("audio/wav", wav_bytes(16000)),
    "mp3": lambda: ("audio/mpeg", mp3_bytes(22050)),
    "opus48k": lambda: ("audio/ogg", encoded("ogg", "libopus", 48000)),
    "flac44k": lambda: ("audio/flac", encoded("flac", "flac", 44100)),
    "aac24k": lambda: ("audio/aac", encoded("adts", "aac", 24000)),
    "html": lambda: ("text/html", b"<html><body>Bad Gateway</body></html>"),
    "broken_mp3": lambda: ("audio/mpeg", b"ID3\x03\0\0\0\0\0\0" + bytes(300)),
}


@pytest.fixture
async def speech_server():
    seen = []

    async def speech(request):
        body = await request.json()
        seen.append(body)
        content_type, data = ANSWERS[body["voice"]]()
        resp = web.StreamResponse(headers={"Content-Type": content_type})
        await resp.prepare(request)
        for i in range(0, len(data), 1001):   # odd pieces: headers and samples split across writes
            await resp.write(data[i:i + 1001])
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/v1/audio/speech", speech)
    runner, url = await serve(app)
    yield url + "/v1", seen
    await runner.cleanup()


def tts(url, **extra):
    return create("tts", dict({"type": "openai", "base_url": url, "api_key": "k"}, **extra))


@pytest.mark.parametrize("voice, fmt, rate, pcm_rate", [
    ("pcm22k", "pcm", 22050, 22050),
    ("wav_streamed", "wav", 24000, 24000),
    ("wav_float_stereo", "wav", 44100, 24000),
    ("wav_for_pcm", "pcm", 16000, 24000),   # a server that answers WAV to a pcm request
])
async def test_pcm_and_wav_variants_stream_at_their_own_rate(speech_server, voice, fmt, rate, pcm_rate):
    url, seen = speech_server
    chunks = [c async for c in tts(url, voice=voice, response_format=fmt, pcm_rate=pcm_rate).stream("Hi")]
    assert seen[-1]["response_format"] == fmt
    assert len(chunks) > 1 and {c.rate for c in chunks} == {rate}
    pcm = b"".join(c.pcm for c in chunks)
    assert audio.seconds(pcm, rate) == pytest.approx(0.6, abs=0.002)   # no header bytes, no trailing chunk
    assert abs(audio.dominant_hz(pcm, rate) - HZ) < 5
    assert audio.rms(pcm) > 2000


async def test_mp3_is_decoded(speech_server):
    url, _ = speech_server
    chunk = await tts(url, voice="mp3", response_format="mp3").synthesize("Hi")
    assert chunk.rate == 22050 and chunk.seconds == pytest.approx(0.6, abs=0.08)   # MP3 pads a frame or two
    assert abs(audio.dominant_hz(chunk.pcm, 22050) - HZ) < 5


@pytest.mark.parametrize("voice, fmt, rate", [
    ("opus48k", "opus", 48000), ("flac44k", "flac", 44100), ("aac24k", "aac", 24000),
    ("mp3", "pcm", 22050),   # a server that answers MP3 (no ID3 tag) whatever was asked: its Content-Type tells
])
async def test_compressed_answers_are_decoded_at_their_rate(speech_server, voice, fmt, rate):
    url, _ = speech_server
    chunk = await tts(url, voice=voice, response_format=fmt).synthesize("Hi")
    assert chunk.rate == rate and chunk.seconds == pytest.approx(0.6, abs=0.1)   # codecs pad a frame or two
    assert abs(audio.dominant_hz(chunk.pcm, rate) - HZ) < 5


async def test_down_or_silent_servers_are_tts_errors():
    """Nothing listening, or a server that takes the request and never
    answers (past `timeout`): a TtsError each, so the chain speaks instead."""
    from testkit.local_net import unused_port
    with pytest.raises(TtsError, match="failed"):
        await tts("http://127.0.0.1:%d/v1" % unused_port()).synthesize("Hi")
    never = asyncio.Event()

    async def speech(request):
        await never.wait()

    app = web.Application()
    app.router.add_post("/v1/audio/speech", speech)
    runner, url = await serve(app)
    try:
        with pytest.raises(TtsError, match="timed out"):
            await tts(url + "/v1", timeout=0.3).synthesize("Hi")
    finally:
        never.set()
        await runner.cleanup()


@pytest.mark.parametrize("voice", ["html", "broken_mp3"])
async def test_a_body_that_is_not_audio_is_a_tts_error(speech_server, voice):
    url, _ = speech_server
    with pytest.raises(TtsError, match="unreadable"):
        await tts(url, voice=voice).synthesize("Hi")


def test_sniff_and_split_headers():
    assert sniff(wav_bytes(8000)[:16]) == "wav" and sniff(b"ID3\x04") == "mp3"
    assert sniff(b"\xff\xfb\x90\x00") == "mp3" and sniff(b"\xff\xfb\x90\x00", expect_pcm=True) == "pcm"
    whole = wav_bytes(16000)
    parser = WavStream()
    out = b"".join(parser.feed(whole[i:i + 1]) for i in range(len(whole)))   # a byte at a time
    assert parser.rate == 16000 and out == audio.tone(HZ, 600, 16000)
