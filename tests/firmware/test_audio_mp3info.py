# MP3 durations from frame headers, on the two committed lesson-like files:
#   cbr_1500ms_notag.mp3: 1.5 s chirp, lame -t -b 16, 16 kHz, no Xing tag:
#     44 frames of 576 samples = 1584 ms, what a decoder plays (soxi -s 25344).
#   vbr_2000ms_id3.mp3: 2.0 s chirp, lame -V 7, 16 kHz, ID3v2 + Xing/LAME tag:
#     2000 ms exactly once the encoder delay and padding are removed.
import t
import mp3info
import audio

DATA = "tests/firmware/data/"


def test_cbr_without_tag_counts_frames():
    info = mp3info.mp3_info(DATA + "cbr_1500ms_notag.mp3")
    t.eq(info["sample_rate"], 16000, "rate")
    t.eq(info["channels"], 1, "channels")
    t.eq(info["frames"], 44, "frames")
    t.eq(info["duration_ms"], 1584, "duration")


def test_vbr_with_id3_and_gapless_tag():
    info = mp3info.mp3_info(DATA + "vbr_2000ms_id3.mp3")
    t.eq(info["sample_rate"], 16000, "rate")
    t.eq(info["samples"], 32000, "samples")
    t.eq(audio.mp3_duration_ms(DATA + "vbr_2000ms_id3.mp3"), 2000, "duration")


def _copy(src, dst, keep=None, prefix=b""):
    with open(src, "rb") as f:
        data = f.read()
    if keep is not None:
        data = data[:keep]
    with open(dst, "wb") as f:
        f.write(prefix + data)


def test_truncated_file_reports_the_frames_it_still_has():
    d = t.tmpdir("mp3")
    _copy(DATA + "cbr_1500ms_notag.mp3", d + "/half.mp3", keep=72 * 22 + 10)
    # 16 kbit/s at 16 kHz: 72 bytes per frame; 22 whole frames survive.
    t.eq(mp3info.mp3_info(d + "/half.mp3")["frames"], 22, "frames left")


def test_leading_junk_is_skipped():
    d = t.tmpdir("mp3")
    _copy(DATA + "cbr_1500ms_notag.mp3", d + "/junk.mp3", prefix=b"\xff\xf3junk" * 20)
    t.eq(mp3info.mp3_duration_ms(d + "/junk.mp3"), 1584, "duration")


def test_not_an_mp3_is_an_error():
    d = t.tmpdir("mp3")
    with open(d + "/x.mp3", "wb") as f:
        f.write(b"RIFF" + bytes(400))
    t.raises(ValueError, mp3info.mp3_info, d + "/x.mp3")
    with open(d + "/empty.mp3", "wb") as f:
        pass
    t.raises(ValueError, mp3info.mp3_duration_ms, d + "/empty.mp3")


def test_header_fields():
    # MPEG-1 Layer III, 128 kbit/s, 44.1 kHz, padded, joint stereo.
    h = mp3info.parse_header(b"\xff\xfb\x92\x44")
    t.eq(h[:6], (10, 44100, 128, 1152, 418, 2), "header")
    t.eq(mp3info.parse_header(b"\xff\xfd\x90\x44"), None, "layer II refused")
    t.eq(mp3info.parse_header(b"\xff\xfb\xf0\x44"), None, "bad bitrate refused")
