"""What goes into the board image, checked without ESP-IDF: the frozen
manifest's file set, the partition table, and the board definition agreeing
with the HAL's pin table and NVS size.

MicroPython's manifest tool needs its own source tree, which is not on this
machine, so the manifest runs here against a recorder of the documented
manifest API (include/module/package: paths relative to the manifest, a
package walks its folder or takes `files` relative to it)."""
import ast
import os
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
    names |= {"hal/" + p.name for p in (FIRMWARE / "hal").glob("*.py")}
    names |= {"hal/esp32/" + p.name for p in (FIRMWARE / "hal" / "esp32").glob("*.py")}
    names |= {p.relative_to(FIRMWARE).as_posix() for p in (FIRMWARE / "app").rglob("*.py")
              if "__pycache__" not in p.parts}
    return names | {"main.py", "fwversion.py"}


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
    assert [r[0] for r in rows] == ["nvs", "phy_init", "factory", "assets", "vfs"]
    end = 0x9000  # bootloader and the table itself come first
    for name, ptype, _, off, size in rows:
        assert off >= end, name
        assert off % (0x10000 if ptype == "app" else 0x1000) == 0, name
        end = off + size
    assert end <= 16 * 1024 * 1024


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


def hal_pins():
    tree = ast.parse((FIRMWARE / "hal" / "esp32" / "board.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PINS":
            return ast.literal_eval(node.value)
    raise AssertionError("no PINS table")


def test_board_i2c_pins_equal_the_hal_pin_table():
    header = (BOARD / "mpconfigboard.h").read_text()
    defined = dict((k, int(v)) for k, v in re.findall(r"#define (MICROPY_HW_I2C0_\w+)\s+\((\d+)\)", header))
    pins = hal_pins()
    assert defined == {"MICROPY_HW_I2C0_SCL": pins["i2c_scl"], "MICROPY_HW_I2C0_SDA": pins["i2c_sda"]}


def test_hardware_doc_lists_every_pin_of_the_hal_table():
    doc = (ROOT / "docs" / "hardware.md").read_text()
    for name, gpio in hal_pins().items():
        assert re.search(r"\|\s*`%s`\s*\|\s*GPIO%d\s*\|" % (name, gpio), doc), name
    for name, _, _, off, size in partitions():
        assert re.search(r"\|\s*`%s`\s*\|.*\|\s*0x%X\s*\|\s*0x%X\s*\|" % (name, off, size), doc, re.I), name
