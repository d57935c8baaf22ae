"""ctypes view of the portable C audio core (build/cmodule/libxzaudio.so),
so host tests and benchmarks drive the same C code the board runs."""
import ctypes
import subprocess

from testkit import ROOT

LIB_PATH = ROOT / "build" / "cmodule" / "libxzaudio.so"
ERR_ARG, ERR_FRAME, ERR_SPACE = -100, -101, -102
MAX_PACKET = 1276

u8p = ctypes.POINTER(ctypes.c_uint8)
i16p = ctypes.POINTER(ctypes.c_int16)


class Ring(ctypes.Structure):
    _fields_ = [("buf", u8p), ("mask", ctypes.c_uint32), ("head", ctypes.c_uint32),
                ("tail", ctypes.c_uint32), ("dropped", ctypes.c_uint32),
                ("underruns", ctypes.c_uint32)]


class Framer(ctypes.Structure):
    _fields_ = [("buf", i16p), ("frame_samples", ctypes.c_uint32), ("fill", ctypes.c_uint32)]


class Mp3Info(ctypes.Structure):
    _fields_ = [("sample_rate", ctypes.c_uint32), ("channels", ctypes.c_uint32),
                ("frames", ctypes.c_uint32), ("samples", ctypes.c_uint64),
                ("duration_ms", ctypes.c_uint32), ("avg_bitrate", ctypes.c_uint32),
                ("audio_offset", ctypes.c_uint32), ("flags", ctypes.c_uint32)]


MP3_FROM_XING, MP3_FROM_VBRI, MP3_LAME_GAP, MP3_VBR = 1, 2, 4, 8
RS_TAPS, RS_MAX_UP, RS_MAX_IN = 32, 3, 1440


class Resampler(ctypes.Structure):
    _fields_ = [("up", ctypes.c_uint32), ("down", ctypes.c_uint32), ("acc", ctypes.c_uint32),
                ("coef", ctypes.c_int16 * (RS_TAPS * RS_MAX_UP)),
                ("work", ctypes.c_int16 * (RS_TAPS - 1 + RS_MAX_IN))]


_SIGS = {
    "xz_ring_init": (ctypes.c_int, [ctypes.POINTER(Ring), ctypes.c_void_p, ctypes.c_uint32]),
    "xz_ring_used": (ctypes.c_uint32, [ctypes.POINTER(Ring)]),
    "xz_ring_free": (ctypes.c_uint32, [ctypes.POINTER(Ring)]),
    "xz_ring_write": (ctypes.c_uint32, [ctypes.POINTER(Ring), ctypes.c_char_p, ctypes.c_uint32]),
    "xz_ring_read": (ctypes.c_uint32, [ctypes.POINTER(Ring), ctypes.c_void_p, ctypes.c_uint32]),
    "xz_pkt_push": (ctypes.c_int, [ctypes.POINTER(Ring), ctypes.c_char_p, ctypes.c_uint32]),
    "xz_pkt_skip": (ctypes.c_int, [ctypes.POINTER(Ring)]),
    "xz_pkt_peek_len": (ctypes.c_int, [ctypes.POINTER(Ring)]),
    "xz_pkt_pop": (ctypes.c_int, [ctypes.POINTER(Ring), ctypes.c_void_p, ctypes.c_uint32]),
    "xz_frame_samples": (ctypes.c_uint32, [ctypes.c_uint32, ctypes.c_uint32]),
    "xz_framer_init": (None, [ctypes.POINTER(Framer), ctypes.c_void_p, ctypes.c_uint32]),
    "xz_framer_feed": (ctypes.c_uint32, [ctypes.POINTER(Framer), ctypes.c_void_p, ctypes.c_uint32]),
    "xz_framer_full": (ctypes.c_int, [ctypes.POINTER(Framer)]),
    "xz_framer_take": (None, [ctypes.POINTER(Framer)]),
    "xz_enc_size": (ctypes.c_size_t, []),
    "xz_enc_init": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32]),
    "xz_enc_frame_samples": (ctypes.c_uint32, [ctypes.c_void_p]),
    "xz_enc_encode": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32,
                                     ctypes.c_void_p, ctypes.c_uint32]),
    "xz_dec_size": (ctypes.c_size_t, []),
    "xz_dec_init": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint32]),
    "xz_dec_decode": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32,
                                     ctypes.c_void_p, ctypes.c_uint32]),
    "xz_mp3_info": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(Mp3Info)]),
    "xz_mp3_id3v2_size": (ctypes.c_uint32, [ctypes.c_char_p, ctypes.c_size_t]),
    "xz_rs_init": (ctypes.c_int, [ctypes.POINTER(Resampler), ctypes.c_uint32, ctypes.c_uint32]),
    "xz_rs_max_out": (ctypes.c_uint32, [ctypes.POINTER(Resampler), ctypes.c_uint32]),
    "xz_rs_process": (ctypes.c_int, [ctypes.POINTER(Resampler), ctypes.c_char_p, ctypes.c_uint32,
                                     ctypes.c_void_p, ctypes.c_uint32]),
}


def build():
    """Runs the Makefile target (a no-op when nothing changed)."""
    p = subprocess.run(["make", "--no-print-directory", "cmodule-host"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("make cmodule-host failed:\n" + p.stdout + p.stderr)


def load():
    lib = ctypes.CDLL(str(LIB_PATH))
    for name, (res, args) in _SIGS.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return Core(lib)


class Core:
    def __init__(self, lib):
        self.lib = lib

    def encoder(self, rate, frame_ms=60):
        return Encoder(self.lib, rate, frame_ms)

    def decoder(self, rate):
        return Decoder(self.lib, rate)

    def mp3_info(self, data):
        info = Mp3Info()
        rc = self.lib.xz_mp3_info(data, len(data), ctypes.byref(info))
        if rc != 0:
            return None
        return {f: getattr(info, f) for f, _ in Mp3Info._fields_}


class Encoder:
    def __init__(self, lib, rate, frame_ms):
        self.lib = lib
        self.mem = ctypes.create_string_buffer(lib.xz_enc_size())
        self.status = lib.xz_enc_init(self.mem, rate, frame_ms)
        self.frame_samples = lib.xz_enc_frame_samples(self.mem) if self.status == 0 else 0
        self.out = ctypes.create_string_buffer(MAX_PACKET)

    def encode(self, pcm):
        """pcm: bytes of int16 LE. Returns the packet, or the error code."""
        n = self.lib.xz_enc_encode(self.mem, pcm, len(pcm) // 2, self.out, MAX_PACKET)
        return self.out.raw[:n] if n > 0 else n


class Decoder:
    def __init__(self, lib, rate):
        self.lib = lib
        self.mem = ctypes.create_string_buffer(lib.xz_dec_size())
        self.status = lib.xz_dec_init(self.mem, rate)

    def decode(self, packet, cap=5760):
        """Returns int16 LE bytes, or the error code."""
        out = ctypes.create_string_buffer(cap * 2)
        n = self.lib.xz_dec_decode(self.mem, packet, len(packet or b""), out, cap)
        return out.raw[:n * 2] if n >= 0 else n
