"""The C core's Opus wrapper against libopus as the server sees it
(opuslib): same settings must give the same bytes on the wire, and what the
board decodes must sound like what was sent."""
import numpy as np
import opuslib
import opuslib.api.ctl
import opuslib.api.encoder
import pytest

from testkit import xzcore


def frames(pcm, samples):
    step = samples * 2
    return [pcm[i:i + step] for i in range(0, len(pcm) - step + 1, step)]


def reference_encoder(rate, complexity=0):
    enc = opuslib.Encoder(rate, 1, "voip")
    enc.vbr = 1
    enc.complexity = complexity
    # opuslib 3.0.1's `dtx` setter sends the GET request; use the ctl directly.
    opuslib.api.encoder.encoder_ctl(enc.encoder_state, opuslib.api.ctl.set_dtx, 1)
    return enc


@pytest.mark.parametrize("rate", [16000, 24000])
def test_packets_bit_identical_to_libopus(core, speech, rate):
    n = rate * 60 // 1000
    ours = core.encoder(rate, 60)
    assert ours.status == 0 and ours.frame_samples == n
    ref = reference_encoder(rate)
    pcm_frames = frames(speech[rate], n)
    got = [ours.encode(f) for f in pcm_frames]
    want = [ref.encode(f, n) for f in pcm_frames]
    assert len(got) > 40
    assert got == want
    sizes = [len(p) for p in got]
    # VBR: speech frames vary in size; DTX: silence collapses to tiny packets.
    assert len(set(sizes)) > 5
    assert min(sizes) <= 3 and max(sizes) > 20


def test_comparison_notices_other_settings(core, speech):
    """The bit-identity check is sharp: a different complexity changes bytes."""
    ours = core.encoder(16000, 60)
    ref = reference_encoder(16000, complexity=10)
    pcm_frames = frames(speech[16000], 960)
    assert [ours.encode(f) for f in pcm_frames] != [ref.encode(f, 960) for f in pcm_frames]


def _best_correlation(a, b, max_lag=400):
    best = 0.0
    for lag in range(max_lag):
        x, y = a[:len(a) - lag], b[lag:lag + len(a) - lag]
        m = min(len(x), len(y))
        x, y = x[:m], y[:m]
        c = float(np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y) + 1e-9))
        best = max(best, c)
    return best


def test_round_trip_is_audible_speech(core, speech):
    rate, n = 24000, 1440
    enc, dec = core.encoder(rate, 60), core.decoder(rate)
    assert dec.status == 0
    src = speech[rate]
    out = b"".join(dec.decode(enc.encode(f)) for f in frames(src, n))
    a = np.frombuffer(src[:len(out)], dtype=np.int16).astype(np.float64)
    b = np.frombuffer(out, dtype=np.int16).astype(np.float64)
    assert len(b) == len(a)
    energy = float(np.sum(b ** 2) / np.sum(a ** 2))
    assert 0.5 < energy < 1.5, energy
    # Codec delay is a few ms: align, then the waveforms must match closely.
    assert _best_correlation(a, b) > 0.8


def test_decodes_libopus_packets_like_libopus(core, speech):
    rate, n = 24000, 1440
    ref_enc = reference_encoder(rate)
    ref_dec = opuslib.Decoder(rate, 1)
    dec = core.decoder(rate)
    for f in frames(speech[rate], n)[:30]:
        pkt = ref_enc.encode(f, n)
        assert dec.decode(pkt) == ref_dec.decode(pkt, n)


def test_decoder_refuses_what_does_not_fit_and_conceals_loss(core, speech):
    enc, dec = core.encoder(24000, 60), core.decoder(24000)
    pkt = enc.encode(frames(speech[24000], 1440)[20])
    assert dec.decode(pkt, cap=1000) == xzcore.ERR_SPACE
    assert len(dec.decode(pkt)) == 1440 * 2
    plc = dec.decode(None)  # a lost packet: one frame of concealment
    assert isinstance(plc, bytes) and len(plc) == 1440 * 2
    assert dec.decode(b"\xff" * 3) < 0  # malformed TOC/frame count


def test_encoder_wants_exactly_one_frame(core):
    enc = core.encoder(16000, 60)
    assert enc.encode(b"\0" * 959 * 2) == xzcore.ERR_FRAME
    assert core.encoder(44100, 60).status == xzcore.ERR_ARG
    assert core.encoder(16000, 30).status == xzcore.ERR_ARG
