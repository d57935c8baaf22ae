"""Checks that need no compiler: the module files are wired into the
build, every core source is in it, and every xzaudio method the firmware's
audio.py calls is defined by the binding. Compiling the board binding
against ESP-IDF is test_esp32_glue.py's job."""
import re

from testkit import ROOT

MOD = ROOT / "firmware" / "cmodules"
XZ = MOD / "xzaudio"


def test_top_level_cmake_includes_the_module():
    assert "xzaudio/micropython.cmake" in (MOD / "micropython.cmake").read_text()


def test_every_core_source_is_built_by_both_module_files():
    cmake = (XZ / "micropython.cmake").read_text()
    mk = (XZ / "micropython.mk").read_text()
    for c in sorted((XZ / "core").glob("*.c")):
        assert "core/" + c.name in cmake, c.name
        assert c.name in mk, c.name
    for c in ("mod_xzaudio_io.c", "mod_xzaudio_speech.c", "esp32/xz_engine.c", "esp32/xz_i2s.c",
              "esp32/xz_mp3task.c", "esp32/xz_speech.c"):
        assert c in cmake, c
    # The unix port builds the binding over the host engines, never the board's.
    for c in ("mod_xzaudio_speech.c", "host/xz_engine_host.c", "host/xz_speech_host.c"):
        assert c in mk, c
    assert "esp32/xz_" not in mk.replace("esp32/xz_engine.h", "")


def test_module_is_registered_and_core_stays_portable():
    src = (XZ / "mod_xzaudio.c").read_text()
    assert "MP_REGISTER_MODULE(MP_QSTR_xzaudio" in src
    for c in (XZ / "core").glob("*.[ch]"):
        text = c.read_text()
        assert not re.search(r'#include\s+["<](py/|esp_|driver/|freertos/)', text), c.name


def test_firmware_calls_only_what_the_binding_defines():
    qstrs = set()
    for c in XZ.glob("mod_xzaudio*.c"):
        qstrs |= set(re.findall(r"MP_QSTR_(\w+)", c.read_text()))
    audio = (ROOT / "firmware" / "lib" / "audio.py").read_text()
    used = set(re.findall(r"_c\.(\w+)", audio))
    used |= set(re.findall(r"self\._(?:s|p|e|d)\.(\w+)\(", audio))
    # opuslib's methods are called on self._e/_d too; those are not ours.
    used -= {"encode", "decode"} - qstrs
    missing = sorted(u for u in used if u not in qstrs)
    assert not missing, missing
    assert {"AudioIn", "AudioOut", "Mp3Player", "write", "begin", "feed", "end", "pause", "resume", "stop"} <= used
    # asyncio's StreamReader/Writer call these on the objects themselves.
    assert {"readinto", "write"} <= qstrs


def test_component_manifest_declares_the_codecs():
    yml = (XZ / "idf_component.yml").read_text()
    assert "espressif/esp_audio_codec" in yml and "esp-opus" in yml


def test_audio_pins_agree_in_the_engine_the_binding_and_the_hardware_doc():
    """The board's I2S wiring is written in three places: a board change
    that missed one would start the codec on the wrong pins. The engine's
    default wiring and xzaudio.start()'s keywords are the same set, with
    the same defaults."""
    engine = (XZ / "esp32" / "xz_engine.h").read_text()
    default = re.search(r"#define XZ_PINS_DEFAULT \{(.*?)\}\n", engine, re.S).group(1)
    pins = {k: int(v) for k, v in re.findall(r"\.(\w+) = (-?\d+)", default)}
    fields = re.search(r"typedef struct \{(.*?)\} xz_pins_t;", engine, re.S).group(1)
    names = re.findall(r"(\w+)(?=[,;])", re.sub(r"/\*.*?\*/", "", fields, flags=re.S))
    assert sorted(pins) == sorted(names)
    binding = (XZ / "mod_xzaudio_io.c").read_text()
    start_kw = {k: int(v) for k, v in re.findall(r"\{MP_QSTR_(\w+), MP_ARG_KW_ONLY \| MP_ARG_INT, "
                                                 r"\{\.u_int = (-?\d+)\}\}", binding)}
    assert start_kw == pins
    assert {"mode", "rate", "mic_rate", "mic_bclk", "mic_ws", "tdm_slots", "mic_slot", "ref_slot"} <= set(pins)
    doc = (ROOT / "docs" / "hardware.md").read_text()
    for name in ("mclk", "bclk", "ws", "dout", "din"):
        assert re.search(r"\|\s*I2S %s\b[^|]*\|\s*GPIO%d\s*\|" % (name.upper(), pins[name]), doc), name


def test_board_voice_calls_only_what_the_binding_defines():
    qstrs = set()
    for c in XZ.glob("mod_xzaudio*.c"):
        qstrs |= set(re.findall(r"MP_QSTR_(\w+)", c.read_text()))
    voice = (ROOT / "firmware" / "hal" / "esp32" / "voice.py").read_text()
    used = set(re.findall(r"_c\.(\w+)", voice)) | set(re.findall(r"\bsp\.(\w+)\(", voice))
    used |= set(re.findall(r"self\._sp\.(\w+)\(", voice))
    assert {"Speech", "running", "start", "set_commands", "event", "pause", "aec", "models"} <= used
    assert sorted(u for u in used if u not in qstrs) == []


def test_host_i2s_model_uses_the_engine_s_wire_format():
    """The host I2S model (hal/host/i2s_model.py) judges the mic path by the
    BCLK per frame each direction clocks; its figures must be the ones the
    board's engine configures, read from xz_i2s.h and used by xz_i2s.c."""
    from simkit import use_host_hal
    use_host_hal()
    from hal.host.i2s_model import WIRE
    header = (XZ / "esp32" / "xz_i2s.h").read_text()
    wire = {k: int(v) for k, v in re.findall(r"#define XZ_I2S_(\w+_BITS) (\d+)", header)}
    assert wire == {"TX_DATA_BITS": WIRE["tx_data_bits"], "TX_SLOT_BITS": WIRE["tx_slot_bits"],
                    "RX_SLOT_BITS": WIRE["rx_slot_bits"]}
    src = (XZ / "esp32" / "xz_i2s.c").read_text()
    shared = src[src.index("static i2s_std_config_t shared_std_config"):src.index("/* Speaker on I2S0")]
    assert "slot_bit_width = (i2s_slot_bit_width_t)XZ_I2S_TX_SLOT_BITS" in shared
    assert "std_config(p->rate, (i2s_data_bit_width_t)XZ_I2S_TX_DATA_BITS" in shared
    assert "(i2s_data_bit_width_t)XZ_I2S_RX_SLOT_BITS" in src
