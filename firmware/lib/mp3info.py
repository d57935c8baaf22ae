# MP3 duration from frame headers (MPEG-1/2/2.5 Layer III), without decoding
# and without loading the file: a few small reads per frame at most, and
# none per frame when the file carries a Xing/Info or VBRI frame count.
# Same rules as the board's C parser (cmodules/xzaudio/core/xz_mp3info.c):
# skip ID3v2 tags, trust a tag's frame count (minus the LAME encoder delay
# and padding), else count frames; resync over junk on a header whose
# successor also parses. Runs under CPython and MicroPython.
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

_BR_V1 = (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0)
_BR_V2 = (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, 0)
_SR_V1 = (44100, 48000, 32000)
_SCAN = const(512)      # resync window: bytes read per step while hunting a header
_FIRST = const(200)     # enough of the first frame for Xing/Info + LAME fields
_ID3V1 = const(128)


def parse_header(h):
    """(version, rate, kbps, samples, length, channels, crc) or None.
    version is 10, 20 or 25 (MPEG-1, -2, -2.5)."""
    if h[0] != 0xFF or (h[1] & 0xE0) != 0xE0:
        return None
    vb = (h[1] >> 3) & 3
    if vb == 1 or ((h[1] >> 1) & 3) != 1:
        return None
    bi = h[2] >> 4
    si = (h[2] >> 2) & 3
    if bi == 0 or bi == 15 or si == 3:
        return None
    if vb == 3:
        ver, rate, kbps, spf = 10, _SR_V1[si], _BR_V1[bi], 1152
    else:
        ver, rate, kbps, spf = (20 if vb == 2 else 25), _SR_V1[si] >> (1 if vb == 2 else 2), _BR_V2[bi], 576
    length = (spf // 8) * kbps * 1000 // rate + ((h[2] >> 1) & 1)
    return (ver, rate, kbps, spf, length, 1 if (h[3] >> 6) == 3 else 2, (h[1] & 1) == 0)


def _be32(b, i):
    return (b[i] << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3]


class _Reader:
    # Preallocated buffers: one 4-byte header and one scan window.
    def __init__(self, f):
        self.f = f
        self.h = bytearray(4)
        self.win = bytearray(_SCAN)
        f.seek(0, 2)
        self.size = f.tell()

    def header_at(self, pos):
        if pos + 4 > self.size:
            return None
        self.f.seek(pos)
        self.f.readinto(self.h)
        return parse_header(self.h)

    def is_tag_at(self, pos):
        if self.size - pos > _ID3V1 or pos + 3 > self.size:
            return False
        self.f.seek(pos)
        return self.f.read(3) == b"TAG"

    def frame_at(self, pos):
        """A header we believe: it parses and its successor does too (same
        version and rate), or the file ends (maybe after an ID3v1 tag)."""
        fr = self.header_at(pos)
        if fr is None or pos + fr[4] > self.size:
            return None
        end = pos + fr[4]
        if end + 4 > self.size:
            return fr
        nxt = self.header_at(end)
        if nxt is not None:
            return fr if nxt[0] == fr[0] and nxt[1] == fr[1] else None
        return fr if self.is_tag_at(end) else None

    def resync(self, pos):
        """Offset of the next trusted frame at or after pos, or -1."""
        win = self.win
        while pos + 4 <= self.size:
            self.f.seek(pos)
            n = self.f.readinto(win)
            for i in range(n - 1):
                if win[i] == 0xFF and (win[i + 1] & 0xE0) == 0xE0:
                    if self.frame_at(pos + i) is not None:
                        return pos + i
            pos += max(n - 1, 1)
        return -1


def _id3v2_end(r):
    pos = 0
    while True:
        r.f.seek(pos)
        b = r.f.read(10)
        if len(b) < 10 or b[:3] != b"ID3" or b[3] == 0xFF or b[4] == 0xFF or (b[6] | b[7] | b[8] | b[9]) & 0x80:
            return pos
        pos += 10 + ((b[6] << 21) | (b[7] << 14) | (b[8] << 7) | b[9]) + (10 if b[5] & 0x10 else 0)


def _info_tag(b, fr):
    """(frames, gap) from a Xing/Info or VBRI tag in the first frame, or None."""
    ver, _, _, _, length, ch, crc = fr
    side = (17 if ch == 1 else 32) if ver == 10 else (9 if ch == 1 else 17)
    off = 4 + side + (2 if crc else 0)
    lim = min(length, len(b))
    if off + 12 <= lim and b[off:off + 4] in (b"Xing", b"Info"):
        flags = _be32(b, off + 4)
        if not flags & 1:
            return None
        frames = _be32(b, off + 8)
        p = off + 12 + (4 if flags & 2 else 0) + (100 if flags & 4 else 0) + (4 if flags & 8 else 0)
        gap = 0
        if p + 24 <= lim and b[p:p + 4] in (b"LAME", b"Lavf", b"Lavc"):
            g = p + 21
            gap = ((b[g] << 4) | (b[g + 1] >> 4)) + (((b[g + 1] & 0x0F) << 8) | b[g + 2])
        return frames, gap
    if 36 + 18 <= lim and b[36:40] == b"VBRI":
        return _be32(b, 36 + 14), 0
    return None


def mp3_info(path):
    """{'sample_rate', 'channels', 'frames', 'samples', 'duration_ms'};
    raises ValueError when the file holds no MPEG Layer III audio."""
    with open(path, "rb") as f:
        r = _Reader(f)
        pos = r.resync(_id3v2_end(r))
        if pos < 0:
            raise ValueError("no MP3 frame in %s" % path)
        first = r.frame_at(pos)
        f.seek(pos)
        tag = _info_tag(f.read(_FIRST), first)
        if tag is not None:
            frames, gap = tag
        else:
            frames, gap = 0, 0
            while pos + 4 <= r.size:
                fr = r.header_at(pos)
                if fr is not None and fr[0] == first[0] and fr[1] == first[1] and pos + fr[4] <= r.size:
                    frames += 1
                    pos += fr[4]
                    continue
                if r.is_tag_at(pos):
                    break
                pos = r.resync(pos + 1)
                if pos < 0:
                    break
    rate = first[1]
    samples = frames * first[3]
    if gap < samples:
        samples -= gap
    return {"sample_rate": rate, "channels": first[5], "frames": frames,
            "samples": samples, "duration_ms": (samples * 1000 + rate // 2) // rate}


def mp3_duration_ms(path):
    """How long the MP3 at path plays, in milliseconds."""
    return mp3_info(path)["duration_ms"]
