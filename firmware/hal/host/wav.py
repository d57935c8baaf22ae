# Minimal RIFF/WAVE PCM16 reader and writer (no `wave` module on MicroPython).
import struct


def read(path):
    """(sample_rate, channels, pcm_bytes) of a 16-bit PCM WAV file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[0:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError("%s is not a WAV file" % path)
    pos = 12
    rate = channels = bits = None
    while pos + 8 <= len(data):
        cid = data[pos:pos + 4]
        size = struct.unpack("<I", data[pos + 4:pos + 8])[0]
        body = pos + 8
        if cid == b"fmt ":
            fmt, channels, rate = struct.unpack("<HHI", data[body:body + 8])
            bits = struct.unpack("<H", data[body + 14:body + 16])[0]
            if fmt != 1 or bits != 16:
                raise ValueError("%s: only 16-bit PCM WAV is supported" % path)
        elif cid == b"data":
            if rate is None:
                raise ValueError("%s: data before fmt chunk" % path)
            return rate, channels, data[body:body + size]
        pos = body + size + (size & 1)
    raise ValueError("%s: no data chunk" % path)


def write(path, rate, pcm, channels=1):
    n = len(pcm)
    hdr = struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + n, b"WAVE", b"fmt ", 16,
                      1, channels, rate, rate * channels * 2, channels * 2, 16,
                      b"data", n)
    with open(path, "wb") as f:
        f.write(hdr)
        f.write(pcm)
