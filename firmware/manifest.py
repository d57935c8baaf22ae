# Frozen-module manifest of the board image, read by MicroPython's build
# (FROZEN_MANIFEST=<repo>/firmware/manifest.py; tools/flash.py build passes
# it). This is a build-time script run by CPython, not firmware code.
#
# Frozen modules run from flash: they import faster and their bytecode and
# constants stay out of the small MicroPython heap. Relative paths are
# resolved against this folder (the build runs the manifest from here).
#
# What is frozen, under the names the firmware imports:
#   lib/*.py            as top-level modules (ws, proto, log, ...)
#   hal/                the package, without hal/host (the host simulation)
#   app/                the package and its rooms (voice/, entry/, ...)
#   main.py             unless XIAOZHI_FREEZE_MAIN=0 (development image:
#                       a frozen main.py runs in place of /main.py, so a
#                       board that gets its app by `flash.py --app-only`
#                       must not have one)
#   fwversion.py        written by tools/flash.py build into build/firmware/
#   board_profile.py    the board profile (--board NAME), written beside it;
#                       the unix port has none (the host reads the JSON files)
#
# The unix port freezes the same files through manifest_unix.py, which
# passes the options below (its own port manifest, the host HAL, its own
# fwversion.py); the board build passes none.
import os

options.defaults(port_manifest="$(PORT_DIR)/boards/manifest.py", hal="esp32",
                 version_dir="../build/firmware")
include(options.port_manifest)


def _py_files(folder):
    return sorted(n for n in os.listdir(folder) if n.endswith(".py"))


for _name in sorted(os.listdir("lib")):
    if _name.endswith(".py"):
        module(_name, base_path="lib")
    elif os.path.isfile(os.path.join("lib", _name, "__init__.py")):
        package(_name, base_path="lib")

package("hal", files=_py_files("hal") + [options.hal + "/" + n for n in _py_files("hal/" + options.hal)])

if os.path.isdir("app"):
    package("app")

if os.environ.get("XIAOZHI_FREEZE_MAIN", "1") != "0":
    module("main.py")

_VERSION_DIR = options.version_dir
if not os.path.isfile(os.path.join(_VERSION_DIR, "fwversion.py")):
    raise Exception("build/firmware/fwversion.py is missing: build with `tools/flash.py build`")
module("fwversion.py", base_path=_VERSION_DIR)
if os.path.isfile(os.path.join(_VERSION_DIR, "board_profile.py")):
    module("board_profile.py", base_path=_VERSION_DIR)
