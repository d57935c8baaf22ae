#!/usr/bin/env python3
"""Estimate of the board's app image against its app partition.

No Xtensa toolchain here, so the image is not linked: the estimate adds up
what each part would put in flash, from real files where they exist.

- esp-sr (AFE, WakeNet, MultiNet and what they pull in) and esp_audio_codec:
  their published static libraries for the ESP32-S3, read from git mirrors
  (GITDIR@REF:PATH). Counted: every allocated, loadable section of every
  object (.text, .literal, .rodata, .data, .iram*); that is an upper bound,
  as the linker's --gc-sections drops what the glue never reaches.
- the frozen app: the .mpy files mpy-cross makes of firmware/ (frozen
  bytecode in flash is about that size).
- libopus: the text + data of the host's 32-bit libopus.so (Debian's
  libopus0:i386), a stand-in for the Xtensa build (esp-opus builds the same
  sources; code size differs by architecture, so this is rough).
- MicroPython's esp32 port with ESP-IDF (Wi-Fi, lwIP, mbedTLS, BLE off):
  not buildable here; a stated figure (MICROPYTHON_BYTES) that
  `--micropython-bytes` replaces once a real build exists.

    tools/image_size.py [--esp-sr GITDIR@REF] [--audio-codec GITDIR@REF:PATH]
                        [--partitions firmware/partitions.csv]
"""
import argparse
import glob
import os
import struct
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIRROR = "/work/.mirror"
ESP_SR = MIRROR + "/espressif+esp-sr/repo@7ff63a7da40e15e502681be48c4d0e78475544a3"
AUDIO_CODEC = MIRROR + "/espressif+esp-adf-libs/repo@f368fa3:esp_audio_codec"
# esp-sr's libraries a build with AFE (AEC, NS, VAD), WakeNet and MultiNet
# links (its CMakeLists.txt for esp32s3); TTS and the G2P of free-form
# English commands (flite_g2p) are left out: the command words are pinyin.
SR_LIBS = ("c_speech_features", "dl_lib", "esp_audio_front_end", "esp_audio_processor", "fst",
           "hufzip", "multinet", "nsnet", "vadnet", "wakenet")
CODEC_LIBS = ("esp_audio_codec", "esp_audio_simple_dec")
# MicroPython v1.28 ESP32_GENERIC_S3 app (port, ESP-IDF's Wi-Fi/lwIP/mbedTLS,
# its own frozen modules): an assumption, about what MicroPython's published
# S3 images weigh; not measured here.
MICROPYTHON_BYTES = 1_750_000
_SHF_ALLOC = 0x2
_SHT_NOBITS = 8


def git_blob(spec, path):
    """Bytes of path inside GITDIR@REF[:SUBDIR], or None when the mirror lacks the blob."""
    gitdir, ref = spec.split("@", 1)
    sub = ""
    if ":" in ref:
        ref, sub = ref.split(":", 1)
    full = "%s:%s" % (ref, "/".join(p for p in (sub, path) if p))
    r = subprocess.run(["git", "-C", gitdir, "show", full], capture_output=True)
    return r.stdout if r.returncode == 0 else None


def elf_alloc_bytes(data):
    """Flash bytes of one ELF32 object: its allocated sections with contents."""
    if data[:4] != b"\x7fELF" or data[4] != 1:
        return 0
    end = "<" if data[5] == 1 else ">"
    shoff, = struct.unpack_from(end + "I", data, 0x20)
    shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
    total = 0
    for i in range(shnum):
        off = shoff + i * shentsize
        _, sh_type, flags, _, _, size = struct.unpack_from(end + "IIIIII", data, off)
        if flags & _SHF_ALLOC and sh_type != _SHT_NOBITS:
            total += size
    return total


def archive_alloc_bytes(data):
    """Sum of elf_alloc_bytes over the members of a Unix ar archive."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not an ar archive")
    pos, total = 8, 0
    while pos + 60 <= len(data):
        size = int(data[pos + 48:pos + 58].decode().strip())
        body = data[pos + 60:pos + 60 + size]
        total += elf_alloc_bytes(body)
        pos += 60 + size + (size & 1)
    return total


def frozen_app_bytes():
    mpy_cross = ROOT / "build" / "micropython" / "mpy-cross" / "mpy-cross"
    if not mpy_cross.exists():
        return None
    import tempfile
    total = 0
    with tempfile.TemporaryDirectory() as out:   # a dry run writes nothing into the tree
        for src in sorted((ROOT / "firmware").rglob("*.py")):
            rel = src.relative_to(ROOT / "firmware")
            if rel.parts[0] == "hal" and len(rel.parts) > 1 and rel.parts[1] == "host":
                continue   # the host HAL is not frozen into the board image
            dst = Path(out) / (str(rel).replace("/", "__")[:-3] + ".mpy")
            subprocess.run([str(mpy_cross), "-o", str(dst), str(src)], check=True, capture_output=True)
            total += dst.stat().st_size
    return total


def opus_bytes():
    for so in sorted(glob.glob("/usr/lib/i386-linux-gnu/libopus.so.0.*")):
        r = subprocess.run(["size", "-A", so], capture_output=True, text=True)
        if r.returncode:
            return None
        keep = (".text", ".rodata", ".data", ".data.rel.ro")
        return sum(int(line.split()[1]) for line in r.stdout.splitlines()[2:]
                   if line.split() and line.split()[0] in keep)
    return None


def partitions(path):
    rows = {}
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        f = [x.strip() for x in line.split(",")]
        if f[0] == "Name" or len(f) < 5 or not f[4]:
            continue
        rows[f[0]] = (f[1], f[2], int(f[3], 0) if f[3] else None, int(f[4], 0))
    return rows


def estimate(esp_sr=ESP_SR, audio_codec=AUDIO_CODEC, micropython_bytes=MICROPYTHON_BYTES):
    """[(part, bytes or None, how)] for each part of the image."""
    parts = [("MicroPython esp32 port + ESP-IDF (assumed)", micropython_bytes, "stated figure")]
    app = frozen_app_bytes()
    parts.append(("frozen app (.mpy by mpy-cross)", app, "measured" if app else "mpy-cross not built"))
    op = opus_bytes()
    parts.append(("libopus (i386 stand-in)", op, "measured" if op else "libopus0:i386 missing"))
    for name in CODEC_LIBS:
        data = git_blob(audio_codec, "lib/esp32s3/lib%s.a" % name)
        parts.append((name, archive_alloc_bytes(data) if data else None,
                      "all objects" if data else "blob absent in the mirror"))
    for name in SR_LIBS:
        data = git_blob(esp_sr, "lib/esp32s3/lib%s.a" % name)
        parts.append(("esp-sr " + name, archive_alloc_bytes(data) if data else None,
                      "all objects" if data else "blob absent in the mirror"))
    return parts


def report_lines(table=ROOT / "firmware" / "partitions.csv", **kw):
    """(lines, total, [(app partition, size)])."""
    parts = estimate(**kw)
    total = sum(b for _, b, _ in parts if b)
    lines = ["app image estimate (upper bound: whole libraries, before --gc-sections):"]
    for name, b, how in parts:
        lines.append("  %-46s %10s  %s" % (name, "%d" % b if b else "?", how))
    lines.append("  %-46s %10d" % ("total", total))
    apps = [(n, r[3]) for n, r in partitions(table).items() if r[0] == "app"]
    for name, size in apps:
        lines.append("  partition %-36s %10d  %s (%d%% used)" % (
            name, size, "fits" if total <= size else "DOES NOT FIT", 100 * total // size))
    missing = [n for n, b, _ in parts if not b]
    if missing:
        lines.append("  not counted: %s" % ", ".join(missing))
    return lines, total, apps


def report(table=ROOT / "firmware" / "partitions.csv", out=sys.stdout, **kw):
    lines, total, apps = report_lines(table, **kw)
    out.write("\n".join(lines) + "\n")
    return total, apps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--esp-sr", default=os.environ.get("XZ_ESP_SR_SRC", ESP_SR))
    ap.add_argument("--audio-codec", default=AUDIO_CODEC)
    ap.add_argument("--partitions", default=str(ROOT / "firmware" / "partitions.csv"))
    ap.add_argument("--micropython-bytes", type=int, default=MICROPYTHON_BYTES)
    a = ap.parse_args(argv)
    total, apps = report(a.partitions, esp_sr=a.esp_sr, audio_codec=a.audio_codec,
                         micropython_bytes=a.micropython_bytes)
    return 0 if apps and all(total <= size for _, size in apps) else 1


if __name__ == "__main__":
    sys.exit(main())
