"""What the glue check reads and reports about versions and configuration:
component versions against our ranges, the board's sdkconfig defaults,
the generated sdkconfig.h, what the component manager resolved."""
import re
from pathlib import Path

import yaml

NO_SPIRAM_DEFAULTS = "CONFIG_SPIRAM=y\nCONFIG_SPIRAM_MODE_OCT=y\nCONFIG_SPIRAM_SPEED_80M=y\n"


def idf_version(root):
    text = (root / "components" / "esp_common" / "include" / "esp_idf_version.h").read_text()
    parts = [re.search(r"#define ESP_IDF_VERSION_%s\s+(\d+)" % k, text).group(1)
             for k in ("MAJOR", "MINOR", "PATCH")]
    return "esp_idf_version.h says v" + ".".join(parts)


def component_version(root):
    m = re.search(r"^version:\s*['\"]?([\w.\-~]+)", (root / "idf_component.yml").read_text(), re.M)
    return m.group(1) if m else "unknown"


def caret_admits(spec, version):
    """`^X.Y.Z` as the IDF component manager reads it (semver caret)."""
    want = [int(x) for x in spec.lstrip("^").split(".")]
    have = [int(x) for x in re.match(r"[\d.]+", version).group(0).strip(".").split(".")]
    return have[0] == want[0] and have >= want if want[0] else have[:2] == want[:2] and have >= want


def check_versions(manifest, trees):
    """Our idf_component.yml must admit the versions compiled against
    (trees: {registry name: folder})."""
    ours = Path(manifest).read_text()
    ok = True
    for name, root in trees.items():
        spec = re.search(r"^\s*%s:\s*['\"]([^'\"]+)" % re.escape(name), ours, re.M).group(1)
        have = component_version(root)
        admits = caret_admits(spec, have)
        print("  idf_component.yml %s %s %s %s" % (name, spec, "admits" if admits else "does NOT admit", have))
        ok = ok and admits
    return ok


def registry_dependencies(root):
    """{name: version} of a component's registry dependencies (not idf), each
    the lowest version its range names ("1.8.0", ">=0.2.0", "^1.7.19")."""
    deps = yaml.safe_load((Path(root) / "idf_component.yml").read_text()).get("dependencies") or {}
    out = {}
    for name, spec in deps.items():
        if name == "idf":
            continue
        spec = spec.get("version", "*") if isinstance(spec, dict) else str(spec)
        m = re.search(r"\d+(?:\.\d+)*", spec)
        out[name] = m.group(0) if m else "1.0.0"
    return out


def sdkconfig_defaults(build, mp, board, partitions):
    """The board's sdkconfig defaults, in the order its mpconfigboard.cmake
    lists them (MicroPython's boards/... files come from the MicroPython
    tree), concatenated as MicroPython's CMake does."""
    out = build / "sdkconfig.defaults"
    text = (board / "mpconfigboard.cmake").read_text()
    block = re.search(r"set\(SDKCONFIG_DEFAULTS(.*?)\)", text, re.S).group(1)
    parts = []
    for item in block.split():
        if "sdkconfig.xiaozhi_partitions" in item:
            # As the board's CMake writes it: our table, by absolute path.
            parts.append('CONFIG_PARTITION_TABLE_CUSTOM=y\nCONFIG_PARTITION_TABLE_CUSTOM_FILENAME="%s"\n'
                         % partitions)
            continue
        if item.startswith("${CMAKE_CURRENT_LIST_DIR}/"):
            parts.append((board / item.split("/", 1)[1]).read_text())
        elif mp:
            parts.append((mp.root / "ports" / "esp32" / item).read_text())
    if not mp:
        parts.append(NO_SPIRAM_DEFAULTS)
    out.write_text("\n".join(parts))
    return [out]


# The speech models our board asks esp-sr's Kconfig for (sdkconfig.board);
# a name esp-sr does not have would be dropped by kconfgen without a word.
SR_CHOICES = ("SR_WN_WN9_NIHAOXIAOZHI_TTS", "SR_MN_CN_MULTINET7_QUANT", "MODEL_IN_FLASH")


def print_sdkconfig(header):
    """Prints the settings that matter; False when a speech model choice
    of the board did not reach the sdkconfig."""
    text = header.read_text()
    keys = ("IDF_TARGET", "SPIRAM_MODE_OCT", "FREERTOS_HZ", "ESP_DEFAULT_CPU_FREQ_MHZ",
            "ESPTOOLPY_FLASHSIZE", "FREERTOS_UNICORE") + SR_CHOICES
    got = []
    for k in keys:
        m = re.search(r"#define CONFIG_%s (.*)" % k, text)
        got.append("%s=%s" % (k, m.group(1) if m else "(unset)"))
    print("sdkconfig.h (kconfgen, esp32s3): " + ", ".join(got))
    missing = [k for k in SR_CHOICES if not re.search(r"#define CONFIG_%s 1" % k, text)]
    if missing:
        print("check_esp32_glue: esp-sr's Kconfig did not take %s from sdkconfig.board" % ", ".join(missing))
    return not missing


def resolved(port, target):
    """What the component manager resolved, from the lock file it wrote."""
    lock = port / "lockfiles" / ("dependencies.lock." + target)
    deps = yaml.safe_load(lock.read_text()).get("dependencies", {})
    return ", ".join("%s %s" % (k, v.get("version")) for k, v in deps.items()
                     if k in ("78/esp-opus", "espressif/esp_audio_codec", "espressif/esp-sr", "idf"))
