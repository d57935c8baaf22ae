"""MicroPython's own ESP32 port build, configured as the board build does
it: ports/esp32's CMake with our board folder (MICROPY_BOARD_DIR), our
user C modules (USER_C_MODULES) and our idf_component.yml merged into the
port's main component manifest (docs/cmodule.md, "Building into the ESP32
firmware"). The IDF component manager runs, offline: every dependency
points at a local folder (override_path), ours at the real esp-opus and
esp_audio_codec and esp-sr trees, so it checks our version ranges against
their versions; the port's own network-only dependencies (mdns, tinyusb,
...) and esp-sr's (esp-dsp, dl_fft, cjson) are empty stand-ins, as none of
their headers reach our files.

The port folder is copied (small) next to links to the rest of the
MicroPython tree, so the tree itself is never written to: the component
manager rewrites the port's lock file.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from esp32glue import idfproject

TOP_LEVEL = ("py", "extmod", "shared", "lib", "drivers", "tools", "mpy-cross")


def overlay(mp_root, out):
    """OUT/ports/esp32 is a copy; everything else MicroPython has is linked."""
    if out.exists():
        shutil.rmtree(out)
    (out / "ports").mkdir(parents=True)
    for name in TOP_LEVEL:
        if (mp_root / name).exists():
            (out / name).symlink_to(mp_root / name)
    shutil.copytree(mp_root / "ports" / "esp32", out / "ports" / "esp32", symlinks=True)
    return out


def stub_component(folder, name, version="0.0.0", include_dir=None):
    """An empty component: one file, so it is a library (a dependent may
    link it by file), a version for the component manager, and the
    headers of INCLUDE_DIR when a dependent includes the real thing's."""
    path = folder / name
    path.mkdir(parents=True, exist_ok=True)
    inc = ' INCLUDE_DIRS "%s"' % include_dir if include_dir else ""
    (path / "CMakeLists.txt").write_text("idf_component_register(SRCS stub.c%s)\n" % inc)
    (path / "stub.c").write_text("typedef int stand_in_t; /* empty stand-in, see mpport.py */\n")
    (path / "idf_component.yml").write_text('version: "%s"\n' % version)
    return path


def merge_manifest(port, ours_text, deps, stubs_dir, transitive=None, headers=None):
    """The port's main manifest with our dependencies added (our version
    ranges, the local trees in DEPS {name: folder}) and the port's own
    dependencies replaced by stand-ins, as are our components' own
    registry dependencies (TRANSITIVE {name: version}: an override_path at
    the top overrides them for every dependent; HEADERS {name: folder} gives
    a stand-in the real headers its dependents include). Returns the
    stand-in names."""
    manifest = port / "main" / "idf_component.yml"
    theirs = yaml.safe_load(manifest.read_text())["dependencies"]
    ours = yaml.safe_load(ours_text)["dependencies"]
    merged, stood_in = {}, []
    for name, spec in theirs.items():
        if name == "idf":
            merged[name] = spec
            continue
        spec = dict(spec) if isinstance(spec, dict) else {"version": spec}
        local = name.replace("/", "__")
        entry = {"version": "*", "override_path": str(stub_component(stubs_dir, local))}
        if "rules" in spec:
            entry["rules"] = spec["rules"]
        merged[name] = entry
        stood_in.append(name)
    for name, spec in ours.items():
        if name == "idf":
            continue  # the port's own idf range is the one that applies
        merged[name] = {"version": spec, "override_path": str(deps[name])}
    for name, version in (transitive or {}).items():
        stub = stub_component(stubs_dir, name.replace("/", "__"), version, (headers or {}).get(name))
        merged[name] = {"version": version, "override_path": str(stub)}
        stood_in.append(name)
    manifest.write_text(yaml.safe_dump({"dependencies": merged}, sort_keys=False))
    lock = port / "lockfiles" / ("dependencies.lock." + idfproject.TARGET)
    if lock.exists():
        lock.unlink()  # pinned for the registry's components; ours replace them
    return stood_in


def named_copy(tree, folder, name):
    """The component manager names a local component after its folder."""
    dest = folder / name
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(tree, dest, symlinks=True, copy_function=os.link)
    return dest


def configure(port, build, idf, toolchain, python, pythonpath, board, usermods, extra_dirs, log):
    env = dict(os.environ, IDF_PATH=str(idf),
               PATH="%s:%s" % (toolchain, os.environ.get("PATH", "")),
               PYTHONPATH=os.pathsep.join(filter(None, [str(pythonpath or ""),
                                                        os.environ.get("PYTHONPATH", "")])))
    env.pop("IDF_COMPONENT_MANAGER", None)
    if build.exists():
        shutil.rmtree(build)
    cmd = ["cmake", "-G", "Ninja", "-S", str(port), "-B", str(build),
           # As ports/esp32/Makefile passes them for BOARD_DIR=... (tools/flash.py).
           "-DMICROPY_BOARD=" + board.name, "-DMICROPY_BOARD_DIR=" + str(board),
           "-DUSER_C_MODULES=" + str(usermods),
           # berkeley-db is a submodule a trimmed MicroPython source may lack;
           # the firmware does not use btree.
           "-DMICROPY_PY_BTREE=0",
           "-DPYTHON=" + python, "-DPYTHON_DEPS_CHECKED=1",
           "-DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY",
           "-DEXTRA_COMPONENT_DIRS=" + ";".join(str(d) for d in extra_dirs)]
    with open(log, "w") as f:
        return subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT).returncode


def main_component_commands(build, files, module_dir):
    """Our files' commands in the port's main component (the firmware's
    objects), not the duplicates CMake lists for the executable target;
    and the other files of MODULE_DIR it compiles (the host engine there
    would define the engine twice)."""
    import json
    entries = json.loads((build / "compile_commands.json").read_text())
    wanted = {str(Path(f).resolve()): f for f in files}
    out, extra = {}, set()
    for e in entries:
        path = str(Path(e["directory"], e["file"]).resolve())
        if not re.search(r"-o \S*__idf_main\.dir/", e["command"]):
            continue
        if path in wanted:
            out[wanted[path]] = (e["directory"], e["command"])
        elif Path(path).is_relative_to(Path(module_dir).resolve()):
            extra.add(path)
    return out, sorted(extra)
