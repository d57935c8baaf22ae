# The firmware's audio API on whichever interpreter runs the suite: with
# Opus (CPython + opuslib) the codecs write into caller buffers; without it
# (MicroPython unix port) the module imports and says clearly why not.
import t
import audio


def _tone(samples, step=7):
    # A saw-ish wave built with integer maths (no math module needed).
    pcm = bytearray(samples * 2)
    v = 0
    for i in range(samples):
        v = (v + step * 97) % 16000 - 8000 if i % 3 else v
        pcm[2 * i] = v & 0xFF
        pcm[2 * i + 1] = (v >> 8) & 0xFF
    return pcm


def test_backend_is_reported():
    t.true(audio.BACKEND in ("xzaudio", "opuslib", None), "backend")
    t.eq(audio.OPUS_AVAILABLE, audio.BACKEND is not None, "flag")


def test_without_opus_the_error_says_why():
    if audio.OPUS_AVAILABLE:
        return
    e = t.raises(audio.OpusUnavailable, audio.Encoder, 16000, 60)
    t.true("pre-encoded" in str(e), "message names the way out")
    t.raises(audio.OpusUnavailable, audio.Decoder, 24000)


def test_encode_decode_into_caller_buffers():
    if not audio.OPUS_AVAILABLE:
        return
    enc = audio.Encoder(16000, 60)
    dec = audio.Decoder(16000)
    out = bytearray(1276)
    pcm_out = bytearray(960 * 2)
    pcm = _tone(960)
    total = 0
    for _ in range(5):
        n = enc.encode(pcm, out)
        t.true(0 < n <= 1276, "packet length")
        m = dec.decode(memoryview(out)[:n], pcm_out)
        t.eq(m, 1920, "decoded bytes")
        total += m
    t.true(any(pcm_out), "decoded audio is not silence")
    t.eq(dec.decode(None, pcm_out), 1920, "one concealed frame")


def test_wrong_sizes_are_refused():
    if not audio.OPUS_AVAILABLE:
        return
    enc = audio.Encoder(16000, 60)
    t.raises(ValueError, enc.encode, bytearray(100), bytearray(1276))
    t.raises(ValueError, audio.Encoder, 44100, 60)
    t.raises(ValueError, audio.Encoder, 16000, 30)
