"""The board-only C (esp32/*.c, and the binding with XZ_HAVE_IO) compiled
against real ESP-IDF, component and MicroPython headers by
tools/check_esp32_glue.py. It needs copies of ESP-IDF, 78/esp-opus,
esp_audio_codec, esp-sr and Espressif's newlib, given by environment variables
(docs/cmodule.md, "Compiling the board glue"); CI has none, so there these
tests skip and say which variables to set."""
import os
import shutil
import subprocess
import sys

import pytest

from testkit import ROOT

SCRIPT = ROOT / "tools" / "check_esp32_glue.py"
XZ = ROOT / "firmware" / "cmodules" / "xzaudio"
NEEDED = ("XZ_IDF_SRC", "XZ_ESP_OPUS_SRC", "XZ_ESP_AUDIO_CODEC_SRC", "XZ_ESP_SR_SRC", "XZ_NEWLIB_SRC")

pytestmark = pytest.mark.skipif(
    not all(os.environ.get(v) for v in NEEDED),
    reason="ESP32 glue check: set %s (and MICROPY_SRC for the binding) to copies of ESP-IDF "
           "v5.4 and the components; none is given here. See docs/cmodule.md"
           % ", ".join(NEEDED))


def run_check(*args, timeout=600):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout)


def status_lines(stdout):
    """[(file, 'ok' | 'FAILED')] from the script's per-file lines, in order
    (a file is compiled once per build the script configures)."""
    out = []
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].endswith(".c") and parts[1] in ("ok", "FAILED"):
            out.append((parts[0].split("xzaudio/")[-1], parts[1]))
    return out


def test_the_board_glue_compiles_against_esp_idf_and_the_components():
    r = run_check()
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    seen = status_lines(r.stdout)
    wanted = {"esp32/" + p.name for p in (XZ / "esp32").glob("*.c")}
    wanted |= {"core/" + p.name for p in (XZ / "core").glob("*.c")}
    if os.environ.get("MICROPY_SRC"):
        # MicroPython's own port build, with our board, module and manifest.
        wanted |= {p.name for p in XZ.glob("mod_xzaudio*.c")}
        assert "component manager resolved 78/esp-opus 1." in r.stdout
        assert "espressif/esp_audio_codec 2." in r.stdout and "espressif/esp-sr 2." in r.stdout
    assert {f for f, _ in seen} == wanted
    assert [f for f, status in seen if status != "ok"] == []
    assert 'IDF_TARGET="esp32s3"' in r.stdout and "SPIRAM_MODE_OCT=1" in r.stdout
    # The board's speech models reached esp-sr's Kconfig (what its build packs).
    assert "SR_WN_WN9_NIHAOXIAOZHI_TTS=1" in r.stdout and "SR_MN_CN_MULTINET7_QUANT=1" in r.stdout


def check_broken_copy(tmp_path, rel, old, new):
    """The check on a copy of the module with OLD replaced by NEW in REL:
    (exit status, {file: status}, output with plain quotes)."""
    module = tmp_path / "xzaudio"
    shutil.copytree(XZ, module)
    src = module / rel
    text = src.read_text()
    assert old in text
    src.write_text(text.replace(old, new, 1))
    r = run_check("--module", str(module), "--micropython", "", "--build", str(tmp_path / "build"))
    return r.returncode, dict(status_lines(r.stdout)), r.stdout.replace("\u2018", "'").replace("\u2019", "'")


def test_a_wrong_component_api_use_fails_the_check(tmp_path):
    """The check is not a rubber stamp: a field esp_audio_codec does not
    have (as an API change between versions would leave) fails it."""
    rc, seen, out = check_broken_copy(tmp_path, "esp32/xz_mp3task.c", "out.needed_size", "out.needed_bytes")
    assert rc == 1
    assert seen["esp32/xz_mp3task.c"] == "FAILED" and seen["esp32/xz_engine.c"] == "ok"
    assert "has no member named 'needed_bytes'" in out


def test_a_wrong_esp_sr_api_use_fails_the_check(tmp_path):
    """The speech engine is compiled against esp-sr's own headers: a field
    its AFE result does not have fails it."""
    rc, seen, out = check_broken_copy(tmp_path, "esp32/xz_speech.c", "res->wake_word_index", "res->wake_index")
    assert rc == 1
    assert seen["esp32/xz_speech.c"] == "FAILED" and seen["esp32/xz_i2s.c"] == "ok"
    assert "has no member named 'wake_index'" in out
