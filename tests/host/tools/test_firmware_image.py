"""What goes into the board image, checked without ESP-IDF: the frozen
manifest's file set, the partition table, and the board definition agreeing
with the HAL's pin table and NVS size.

MicroPython's manifest tool needs its own source tree, which is not on this
machine, so the manifest runs here against a recorder of the documented
manifest API (include/module/package: paths relative to the manifest, a
package walks its folder or takes `files` relative to it)."""
import ast
import sys
import os
import json
import re

import pytest

from testkit import ROOT

FIRMWARE = ROOT / "firmware"
BOARD = FIRMWARE / "boards" / "XIAOZHI_SENING_S3"


class ManifestOptions:
    """The manifest's `options`: keyword arguments of the `include` that ran
    it, and `defaults(**kw)` filling in what the includer did not pass."""

    def __init__(self, given):
        self.__dict__.update(given)

    def defaults(self, **kw):
        for key, value in kw.items():
            self.__dict__.setdefault(key, value)


class ManifestRecorder:
    """Board paths the manifest freezes, resolved the way the docs define."""

    def __init__(self, options=None):
        self.frozen = {}
        self.includes = []
        self.options = ManifestOptions(options or {})

    def include(self, path, **kw):
        self.includes.append(path)

    def module(self, name, base_path="."):
        src = os.path.abspath(os.path.join(base_path, name))
        assert os.path.isfile(src), src
        self.frozen[name] = src

    def package(self, name, files=None, base_path="."):
        root = os.path.join(base_path, name)
        if files is None:
            files = [os.path.relpath(os.path.join(d, f), root)
                     for d, _, fs in os.walk(root) for f in fs if f.endswith(".py")]
        for f in files:
            src = os.path.abspath(os.path.join(root, f))
            assert os.path.isfile(src), src
            self.frozen[name + "/" + f.replace(os.sep, "/")] = src

    def run(self, env=None):
        old_cwd, old_env = os.getcwd(), dict(os.environ)
        os.chdir(FIRMWARE)
        os.environ.update(env or {})
        try:
            code = compile((FIRMWARE / "manifest.py").read_text(), "manifest.py", "exec")
            exec(code, {"include": self.include, "module": self.module, "package": self.package,
                        "options": self.options})
        finally:
            os.chdir(old_cwd)
            os.environ.clear()
            os.environ.update(old_env)
        return self.frozen


@pytest.fixture
def version_module():
    path = ROOT / "build" / "firmware" / "fwversion.py"
    existed = path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not existed:
        path.write_text('VERSION = "test"\n')
    yield path
    if not existed:
        path.unlink()


def expected_frozen():
    names = {p.name for p in (FIRMWARE / "lib").glob("*.py")}
    names |= {p.relative_to(FIRMWARE / "lib").as_posix() for p in (FIRMWARE / "lib").glob("*/*.py")}
    names |= {"hal/" + p.name for p in (FIRMWARE / "hal").glob("*.py")}
    names |= {"hal/esp32/" + p.name for p in (FIRMWARE / "hal" / "esp32").glob("*.py")}
    names |= {p.relative_to(FIRMWARE).as_posix() for p in (FIRMWARE / "app").rglob("*.py")
              if "__pycache__" not in p.parts}
    names |= {"main.py", "fwversion.py"}
    if (ROOT / "build" / "firmware" / "board_profile.py").exists():
        names.add("board_profile.py")  # left by a build: the board profile is frozen too
    return names


def test_manifest_freezes_the_board_profile_a_build_wrote(version_module):
    path = ROOT / "build" / "firmware" / "board_profile.py"
    if path.exists():
        pytest.skip("a build left build/firmware/board_profile.py")
    path.write_text("PROFILE = {}\n")
    try:
        assert ManifestRecorder().run()["board_profile.py"] == str(path)
    finally:
        path.unlink()


def test_manifest_freezes_the_app_lib_esp32_hal_main_and_version(version_module):
    frozen = ManifestRecorder().run()
    assert set(frozen) == expected_frozen()
    assert frozen["fwversion.py"] == str(version_module)
    assert not any(k.startswith("hal/host") for k in frozen)
    assert "ws.py" in frozen and "proto.py" in frozen  # lib modules keep top-level names


def test_manifest_includes_the_port_manifest(version_module):
    rec = ManifestRecorder()
    rec.run()
    assert rec.includes == ["$(PORT_DIR)/boards/manifest.py"]


def test_unix_port_options_freeze_the_host_hal_and_its_own_manifest(version_module, tmp_path):
    (tmp_path / "fwversion.py").write_text('VERSION = "unix"\n')
    rec = ManifestRecorder({"hal": "host", "port_manifest": "$(PORT_DIR)/variants/standard/manifest.py",
                            "version_dir": str(tmp_path)})
    frozen = rec.run()
    assert rec.includes == ["$(PORT_DIR)/variants/standard/manifest.py"]
    assert any(k.startswith("hal/host/") for k in frozen)
    assert not any(k.startswith("hal/esp32/") for k in frozen)
    assert frozen["fwversion.py"] == str(tmp_path / "fwversion.py")


def test_development_image_leaves_main_out(version_module):
    frozen = ManifestRecorder().run({"XIAOZHI_FREEZE_MAIN": "0"})
    assert set(frozen) == expected_frozen() - {"main.py"}


def test_manifest_without_a_version_module_says_how_to_build():
    path = ROOT / "build" / "firmware" / "fwversion.py"
    if path.exists():
        pytest.skip("a build left build/firmware/fwversion.py")
    with pytest.raises(Exception, match="tools/flash.py build"):
        ManifestRecorder().run()


def partitions():
    rows = []
    for line in (FIRMWARE / "partitions.csv").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, ptype, sub, off, size = [c.strip() for c in line.split(",")][:5]
            rows.append((name, ptype, sub, int(off, 0), int(size, 0)))
    return rows


def test_partition_table_fits_16mb_without_overlaps_and_aligned():
    rows = partitions()
    assert [r[0] for r in rows] == ["nvs", "otadata", "phy_init", "ota_0", "ota_1", "model", "vfs"]
    end = 0x9000  # bootloader and the table itself come first
    for name, ptype, _, off, size in rows:
        assert off >= end, name
        assert off % (0x10000 if ptype == "app" else 0x1000) == 0, name
        end = off + size
    assert end <= 16 * 1024 * 1024


def test_model_partition_is_where_esp_sr_looks_for_its_models():
    # esp_srmodel_init("model") finds a data/spiffs partition by that label
    # and maps all of it into data-MMU pages (esp-sr src/model_path.c,
    # srmodel_mmap_init), as xiaozhi-esp32's tables have it
    model = [r for r in partitions() if r[0] == "model"][0]
    assert model[1:3] == ("data", "spiffs")


def test_nvs_partition_is_the_size_the_host_simulation_models():
    nvs = [r for r in partitions() if r[0] == "nvs"][0]
    src = (FIRMWARE / "hal" / "host" / "nvs.py").read_text()
    modelled = int(re.search(r"DEFAULT_SIZE = const\((0x[0-9A-Fa-f]+)\)", src).group(1), 16)
    assert nvs[4] == modelled


def test_board_definition_uses_16mb_and_this_partition_table():
    cmake = (BOARD / "mpconfigboard.cmake").read_text()
    assert "set(IDF_TARGET esp32s3)" in cmake
    assert "../../partitions.csv" in cmake and "CONFIG_PARTITION_TABLE_CUSTOM_FILENAME" in cmake
    assert (BOARD / "../../partitions.csv").resolve() == FIRMWARE / "partitions.csv"
    assert "CONFIG_ESPTOOLPY_FLASHSIZE_16MB=y" in (BOARD / "sdkconfig.board").read_text()
    # the SPIRAM_OCT settings the C module's budget assumes (docs/cmodule.md)
    assert "boards/sdkconfig.spiram_oct" in cmake


def profile(name):
    return json.loads((FIRMWARE / "boards" / ("%s.json" % name)).read_text())


def profile_pins(p):
    """{field: GPIO} of every wired pin of a profile."""
    pins = {"i2c.sda": p["i2c"]["sda"], "i2c.scl": p["i2c"]["scl"]}
    pins.update(("audio.pins." + k, v) for k, v in p["audio"]["pins"].items())
    if p["amp"] and p["amp"]["kind"] == "gpio":
        pins["amp.pin"] = p["amp"]["pin"]
    pins.update(("buttons." + k, v) for k, v in p["buttons"].items() if v is not None)
    pins.update(("sd." + k, v) for k, v in (p["sd"] or {}).items() if k != "width")
    for k in ("rtc_int", "led"):
        if p[k] is not None:
            pins[k] = p[k]
    return pins


def test_board_definition_i2c_pins_are_the_default_profile_s():
    header = (BOARD / "mpconfigboard.h").read_text()
    defined = dict((k, int(v)) for k, v in re.findall(r"#define (MICROPY_HW_I2C0_\w+)\s+\((\d+)\)", header))
    sening = profile("sening")
    assert defined == {"MICROPY_HW_I2C0_SCL": sening["i2c"]["scl"], "MICROPY_HW_I2C0_SDA": sening["i2c"]["sda"]}


def test_hardware_doc_lists_every_pin_of_every_profile_and_the_partitions():
    doc = (ROOT / "docs" / "hardware.md").read_text()
    names = sorted(p.stem for p in (FIRMWARE / "boards").glob("*.json"))
    assert names == ["bread-compact", "esp32-s3-box-3", "sening"]
    for name in names:
        section = doc.split("#### `%s`" % name, 1)[1].split("\n\n", 2)[1]
        for field, gpio in profile_pins(profile(name)).items():
            assert re.search(r"\|\s*`%s`\s*\|\s*GPIO%d\s*\|" % (re.escape(field), gpio), section), (name, field)
    for name, _, _, off, size in partitions():
        assert re.search(r"\|\s*`%s`\s*\|.*\|\s*0x%X\s*\|\s*0x%X\s*\|" % (name, off, size), doc, re.I), name


def test_app_image_estimate_fits_both_ota_slots():
    """tools/image_size.py's upper bound (whole esp-sr and esp_audio_codec
    libraries, the frozen app by mpy-cross) against each app slot."""
    sys.path.insert(0, str(ROOT / "tools"))
    import image_size
    lines, total, apps = image_size.report_lines(FIRMWARE / "partitions.csv")
    assert [n for n, _ in apps] == ["ota_0", "ota_1"]
    counted = [ln for ln in lines if "esp-sr multinet" in ln or "esp_audio_codec " in ln]
    if any(" ? " in ln for ln in counted):
        pytest.skip("the esp-sr / esp-adf-libs mirrors are not on this machine")
    assert all(total <= size for _, size in apps), "\n".join(lines)
