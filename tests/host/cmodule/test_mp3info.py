"""MP3 durations from the C parser (and the firmware's pure-Python twin) on
real files made by lame and sox, compared with the length we synthesised or,
for files without a gapless tag, with what libmad (sox) decodes."""
import subprocess
import sys

import pytest

from testkit import ROOT, xzcore

sys.path.insert(0, str(ROOT / "firmware" / "lib"))
import mp3info  # noqa: E402  firmware module, runs on CPython too

SECONDS = 1.5


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout


def make(tmp, rate, kind):
    """kind: vbr (lame -V: Xing + LAME tag), cbr (lame -b: Info + LAME tag),
    notag (lame -b -t: bare frames), sox (sox -C: bare frames), id3 (vbr + ID3v2)."""
    wav = tmp / ("tone%d.wav" % rate)
    if not wav.exists():
        # A chirp rather than a pure tone, so VBR really varies the bitrate.
        run("sox", "-n", "-r", str(rate), "-c", "1", "-b", "16", str(wav),
            "synth", str(SECONDS), "sine", "200-3000", "vol", "0.5")
    out = tmp / ("%s%d.mp3" % (kind, rate))
    khz = "%g" % (rate / 1000)
    if kind == "vbr":
        run("lame", "--quiet", "-V", "4", "--resample", khz, str(wav), str(out))
    elif kind == "cbr":
        run("lame", "--quiet", "-b", "64", "--resample", khz, str(wav), str(out))
    elif kind == "notag":
        run("lame", "--quiet", "-t", "-b", "64", "--resample", khz, str(wav), str(out))
    elif kind == "sox":
        run("sox", str(wav), "-C", "48", str(out))
    elif kind == "id3":
        run("lame", "--quiet", "-V", "4", "--resample", khz, "--add-id3v2", "--pad-id3v2-size", "700",
            "--tt", "Lesson 3", "--ta", "Teacher", str(wav), str(out))
    return out


def decoded_samples(path):
    return int(run("soxi", "-s", str(path)).strip())


RATES = [16000, 22050, 24000, 44100]


@pytest.fixture(scope="module")
def tmp(tmp_path_factory, tools_for_mp3):
    return tmp_path_factory.mktemp("mp3")


def frame_ms(rate):
    return (1152 if rate >= 32000 else 576) * 1000.0 / rate


@pytest.mark.parametrize("kind", ["vbr", "cbr"])
@pytest.mark.parametrize("rate", RATES)
def test_gapless_tag_gives_the_synthesised_length(core, tmp, rate, kind):
    path = make(tmp, rate, kind)
    info = core.mp3_info(path.read_bytes())
    assert info["sample_rate"] == rate and info["channels"] == 1
    assert info["flags"] & xzcore.MP3_FROM_XING and info["flags"] & xzcore.MP3_LAME_GAP
    assert bool(info["flags"] & xzcore.MP3_VBR) == (kind == "vbr")
    assert abs(info["duration_ms"] - SECONDS * 1000) <= frame_ms(rate)
    assert abs(info["samples"] - SECONDS * rate) <= 1152


@pytest.mark.parametrize("kind", ["notag", "sox"])
@pytest.mark.parametrize("rate", RATES)
def test_cbr_without_tag_matches_what_a_decoder_plays(core, tmp, rate, kind):
    path = make(tmp, rate, kind)
    info = core.mp3_info(path.read_bytes())
    assert info["sample_rate"] == rate
    assert info["flags"] == 0  # no tag, constant bitrate: frames were counted
    played = decoded_samples(path)
    assert abs(info["samples"] - played) <= 1152
    # ... and that is the source plus the encoder's delay, a few frames at most.
    assert 0 <= info["duration_ms"] - SECONDS * 1000 <= 4 * frame_ms(rate)
    expected_kbps = 64 if kind == "notag" else 48
    assert abs(info["avg_bitrate"] - expected_kbps) <= 1


@pytest.mark.parametrize("rate", [24000, 44100])
def test_id3v2_tag_is_skipped(core, tmp, rate):
    plain = core.mp3_info(make(tmp, rate, "vbr").read_bytes())
    data = make(tmp, rate, "id3").read_bytes()
    tagged = core.mp3_info(data)
    assert data[:3] == b"ID3"
    assert tagged["audio_offset"] == core.lib.xz_mp3_id3v2_size(data, len(data)) > 700
    assert tagged["duration_ms"] == plain["duration_ms"]


def test_junk_between_frames_is_skipped(core, tmp):
    data = make(tmp, 44100, "sox").read_bytes()
    clean = core.mp3_info(data)
    # Cut at a real frame boundary: walk five frame headers.
    cut = 0
    for _ in range(5):
        cut += mp3info.parse_header(data[cut:cut + 4])[4]
    junk = bytes([0xFF, 0xFB, 0x00]) + b"\x55" * 300
    dirty = core.mp3_info(data[:cut] + junk + data[cut:])
    assert abs(dirty["frames"] - clean["frames"]) <= 1
    assert abs(dirty["duration_ms"] - clean["duration_ms"]) <= frame_ms(44100)


def test_not_an_mp3(core, tmp):
    wav = (tmp / "tone16000.wav")
    if not wav.exists():
        make(tmp, 16000, "vbr")
    assert core.mp3_info(wav.read_bytes()) is None
    assert core.mp3_info(b"") is None
    assert core.mp3_info(b"ID3\x04\x00\x00\x00\x00\x7f\x7f") is None  # tag larger than the file


@pytest.mark.parametrize("kind", ["vbr", "cbr", "notag", "sox", "id3"])
@pytest.mark.parametrize("rate", RATES)
def test_firmware_parser_agrees_with_the_c_parser(core, tmp, rate, kind):
    path = make(tmp, rate, kind)
    c = core.mp3_info(path.read_bytes())
    py = mp3info.mp3_info(str(path))
    assert (py["duration_ms"], py["frames"], py["sample_rate"], py["samples"]) == \
        (c["duration_ms"], c["frames"], c["sample_rate"], c["samples"])
    assert mp3info.mp3_duration_ms(str(path)) == c["duration_ms"]
