"""The board's C library headers: Espressif's newlib (the fork ESP-IDF's
toolchain is built with), laid out as the toolchain installs them, so the
glue sees newlib, not the host's glibc.

The toolchain's configure step writes newlib.h and _newlib_version.h from
templates; the settings below are the ones that shape declarations (locks,
stdio options, long double), written as newlib's configure would for
Espressif's options. Code size options and iconv tables do not change what
a caller compiles against and are left out.
"""
import re
import shutil

VERSION = {"_NEWLIB_VERSION": '"4.3.0"', "__NEWLIB__": "4", "__NEWLIB_MINOR__": "3",
           "__NEWLIB_PATCHLEVEL__": "0"}
CONFIG = {
    "_RETARGETABLE_LOCKING": "1",  # ESP-IDF's locks.c provides newlib's locks
    "_WANT_IO_C99_FORMATS": "1",
    "_WANT_IO_LONG_LONG": "1",
    "_MB_LEN_MAX": "1",
    "_ATEXIT_DYNAMIC_ALLOC": "1",
    "_FVWRITE_IN_STREAMIO": "1",
    "_FSEEK_OPTIMIZATION": "1",
    "_WIDE_ORIENT": "1",
    "_UNBUF_STREAM_OPT": "1",
    "_HAVE_INITFINI_ARRAY": "1",
    "_HAVE_LONG_DOUBLE": "1",
    "_LDBL_EQ_DBL": "1",  # Xtensa's long double is double
    "_HAVE_CC_INHIBIT_LOOP_TO_LIBCALL": "1",
}
# Header folders, later ones overriding earlier ones, as the toolchain installs them.
LAYERS = ("newlib/libc/include", "newlib/libc/machine/xtensa/include",
          "newlib/libc/sys/xtensa/include")


def _fill(template, values):
    def sub(m):
        name = m.group(1)
        return "#define %s %s" % (name, values[name]) if name in values else m.group(0)
    return re.sub(r"^#undef (\w+)\s*$", sub, template, flags=re.M)


def sysroot(newlib_root, out):
    """Writes OUT/include from a newlib-esp32 tree; returns that folder."""
    inc = out / "include"
    if inc.exists():
        shutil.rmtree(inc)
    inc.mkdir(parents=True)
    for layer in LAYERS:
        src = newlib_root / layer
        if src.is_dir():
            shutil.copytree(src, inc, dirs_exist_ok=True)
    (inc / "_newlib_version.h").write_text(
        _fill((newlib_root / "newlib" / "_newlib_version.hin").read_text(), VERSION))
    (inc / "newlib.h").write_text(
        _fill((newlib_root / "newlib" / "newlib.hin").read_text(), CONFIG))
    return inc
