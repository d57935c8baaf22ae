#!/usr/bin/env python3
"""Compiles xzaudio's board-only C against real ESP-IDF and component
headers: esp32/*.c and core/*.c against ESP-IDF (esp32s3, sdkconfig from
the real Kconfig tree), 78/esp-opus, espressif/esp_audio_codec and
espressif/esp-sr, and with --micropython also the binding (mod_xzaudio*.c,
XZ_HAVE_IO=1) against MicroPython's ports/esp32 headers and our board's
mpconfigboard.h.
Host gcc -m32 with the exact flags ESP-IDF's CMake gives, as far as
assembly text (tools/esp32glue/idfproject.py says why and what that leaves
out).

    tools/check_esp32_glue.py --idf ~/esp-idf --esp-opus ~/esp-opus \\
        --esp-audio-codec ~/esp-adf-libs/esp_audio_codec --esp-sr ~/esp-sr \\
        --micropython ~/micropython

Each source is a folder, GITDIR@REF[:SUBDIR] or a tarball
(tools/esp32glue/sources.py); environment: XZ_IDF_SRC, XZ_ESP_OPUS_SRC,
XZ_ESP_AUDIO_CODEC_SRC, XZ_ESP_SR_SRC, MICROPY_SRC. Exit status 0 only when every file
compiled with no error and no warning; 2 when something to compile against
is missing. docs/cmodule.md, "Compiling the board glue".
"""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from esp32glue import config, idfproject, mpgen, mpport, newlib, sources  # noqa: E402
from esp32glue.compile import compile_all, preprocessor  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
XZ = ROOT / "firmware" / "cmodules" / "xzaudio"
BOARD = ROOT / "firmware" / "boards" / "XIAOZHI_SENING_S3"
IDF_PATHS = ["CMakeLists.txt", "Kconfig", "sdkconfig.rename", ".gitmodules", "components",
             "tools/cmake", "tools/kconfig_new", "tools/requirements", "tools/tools.json"]
# esp-idf-kconfig the v5.4 series is built with (its constraints file).
KCONFGEN_REQ = "esp-idf-kconfig>=2.3,<3"
MANAGER_REQ = "idf-component-manager>=2,<3"
# What the glue itself includes, besides the component's own requirements.
IDF_REQUIRES = ["esp_driver_i2s", "esp_psram", "freertos", "heap", "log", "newlib", "78__esp-opus",
                "espressif__esp_audio_codec", "espressif__esp-sr"]
# What of esp-sr's tree its CMake and our glue read (its models, tests and
# docs stay in the mirror).
ESP_SR_PATHS = ["CMakeLists.txt", "Kconfig.projbuild", "idf_component.yml", "include", "src",
                "esp-tts/esp_tts_chinese/include", "model/movemodel.py"]


def main(argv=None):
    a = parse_args(argv)
    build = Path(a.build).resolve()
    build.mkdir(parents=True, exist_ok=True)
    missing_tools = [t for t in ("cmake", "ninja", "git", a.cc) if not shutil.which(t)]
    if missing_tools:
        return fail(2, "needs %s on PATH (Debian: cmake ninja-build git gcc-multilib)"
                    % ", ".join(missing_tools))
    for name, spec in (("--idf", a.idf), ("--esp-opus", a.esp_opus),
                       ("--esp-audio-codec", a.esp_audio_codec), ("--esp-sr", a.esp_sr),
                       ("--newlib", a.newlib)):
        if not spec:
            return fail(2, "%s is not given (option or environment variable, see --help)" % name)
    try:
        idf = sources.get(a.idf, build / "src" / "esp-idf", IDF_PATHS)
        opus = sources.get(a.esp_opus, build / "src" / "esp-opus")
        codec = sources.get(a.esp_audio_codec, build / "src" / "esp_audio_codec")
        sr = sources.get(a.esp_sr, build / "src" / "esp-sr", ESP_SR_PATHS)
        nl = sources.get(a.newlib, build / "src" / "newlib", ["newlib"])
        mp = sources.get(a.micropython, build / "src" / "micropython") if a.micropython else None
    except sources.SourceError as e:
        return fail(2, str(e))
    cjson = Path(a.cjson) if a.cjson else None
    if not cjson or not (cjson / "cJSON.h").exists():
        return fail(2, "--cjson: a folder with cJSON.h is needed (esp-sr's headers include it; "
                       "Debian: apt-get install libcjson-dev, then /usr/include/cjson)")
    print("ESP-IDF:          %s, %s" % (idf.describe, config.idf_version(idf.root)))
    print("78/esp-opus:      %s, version %s" % (opus.describe, config.component_version(opus.root)))
    print("esp_audio_codec:  %s, version %s" % (codec.describe, config.component_version(codec.root)))
    print("esp-sr:           %s, version %s" % (sr.describe, config.component_version(sr.root)))
    print("newlib:           %s" % nl.describe)
    print("MicroPython:      %s" % (mp.describe if mp else "not given: the binding is not compiled"))
    for t in (idf, opus, codec, sr, nl) + ((mp,) if mp else ()):
        if t.missing:
            print("  note: %d files of %s were not in the mirror" % (t.missing, t.describe))
    trees = {"78/esp-opus": opus.root, "espressif/esp_audio_codec": codec.root, "espressif/esp-sr": sr.root}
    if not config.check_versions(XZ / "idf_component.yml", trees):
        return 1
    pypath = python_tools(build, a.python, [("kconfgen", KCONFGEN_REQ)] +
                          ([("idf_component_manager", MANAGER_REQ)] if mp else []))
    if pypath is False:
        return fail(2, "kconfgen or the IDF component manager is not importable and pip "
                       "could not install it (%s, %s)" % (KCONFGEN_REQ, MANAGER_REQ))
    try:
        fill_submodules(idf, a.idf_submodule, build)
    except (sources.SourceError, ValueError) as e:
        return fail(2, "--idf-submodule: %s" % e)
    stubs = idfproject.missing_submodule_stubs(idf.root)
    placeholders = placeholder_submodules(idf, stubs)
    if stubs:
        print("stand-ins for components whose submodule is absent: %s" % ", ".join(stubs))
    if placeholders:
        print("empty placeholders for absent submodules: %s" % ", ".join(placeholders))
    stub_dir = build / "stubs"
    if stub_dir.exists():
        shutil.rmtree(stub_dir)
    for name in stubs:
        (stub_dir / name).mkdir(parents=True)
        (stub_dir / name / "CMakeLists.txt").write_text("idf_component_register()\n")
    # esp-sr's own registry dependencies (esp-dsp, dl_fft, cjson): none of
    # their headers reach esp-sr's public headers or ours, but its CMake
    # asks for their libraries, so they are components with one empty file.
    # (For the plain project; in the port's build the component manager
    # makes its own from the merged manifest, mpport.merge_manifest.)
    sr_deps = config.registry_dependencies(sr.root)
    sr_stubs = build / "stubs-sr"
    if sr_stubs.exists():
        shutil.rmtree(sr_stubs)
    sr_headers = {"espressif/cjson": cjson}  # esp-sr's dl_lib_coefgetter_if.h includes cJSON.h
    for name, version in sr_deps.items():
        mpport.stub_component(sr_stubs, name.replace("/", "__"), version, sr_headers.get(name))
        # esp-sr requires "cjson" by its short name, which the component
        # manager resolves; the plain project runs without it.
        mpport.stub_component(sr_stubs, name.split("/")[-1], version, sr_headers.get(name))
    print("stand-ins for esp-sr's registry dependencies: %s (cjson with cJSON.h from %s)"
          % (", ".join("%s %s" % kv for kv in sr_deps.items()), cjson))
    toolchain = build / "toolchain"
    idfproject.write_toolchain(toolchain, a.cc, a.cxx, newlib.sysroot(nl.root, build / "sysroot"))

    xz = Path(a.module).resolve()
    glue = sorted((xz / "esp32").glob("*.c")) + sorted((xz / "core").glob("*.c"))
    deps = {"78__esp-opus": opus.root, "espressif__esp_audio_codec": codec.root, "espressif__esp-sr": sr.root}
    # The component manager would put them in the build as esp-sr's
    # dependencies; here main asks for them.
    sr_requires = [n.replace("/", "__") for n in sr_deps]
    bad = idf_step(a, build, idf, deps, sr_requires, mp, xz, glue, [stub_dir, sr_stubs], toolchain, pypath)
    if bad is None:
        return 1
    if mp:
        binding = sorted(xz.glob("mod_xzaudio*.c"))
        more = port_step(a, build, idf, deps, (sr_deps, sr_headers), mp, xz, glue + binding, stub_dir,
                         toolchain, pypath)
        if more is None:
            return 1
        bad += more
    return 1 if bad else 0


def idf_step(a, build, idf, deps, extra_requires, mp, xz, files, stub_dirs, toolchain, pypath):
    """The glue and the core in a plain ESP-IDF project; errors counted, or None."""
    try:
        defaults = config.sdkconfig_defaults(build, mp, BOARD, ROOT / "firmware" / "partitions.csv")
    except FileNotFoundError as e:
        fail(1, "board sdkconfig defaults: %s does not exist" % e)
        return None
    idfproject.write_project(build / "project", deps, files, [xz, xz / "core", xz / "esp32"],
                             IDF_REQUIRES + extra_requires, ["XZ_HAVE_IO=1"], defaults)
    # A fresh sdkconfig each run: kconfgen reads the defaults only when there is none.
    for old in (build / "idf" / "sdkconfig", build / "idf" / "CMakeCache.txt"):
        if old.exists():
            old.unlink()
    log = build / "configure.log"
    if idfproject.configure(build / "project", build / "idf", idf.root, toolchain, a.python, pypath,
                            log, stub_dirs):
        print(tail(log, 40))
        fail(1, "ESP-IDF's CMake configure failed (full log: %s)" % log)
        return None
    print("== ESP-IDF project (esp32s3): the glue and the core")
    if not config.print_sdkconfig(build / "idf" / "config" / "sdkconfig.h"):
        return None
    return compile_all(files, idfproject.commands_for(build / "idf", files))


def port_step(a, build, idf, deps, sr_deps, mp, xz, files, stub_dir, toolchain, pypath):
    """MicroPython's ESP32 port configured with our board, module and merged
    manifest; all our files compiled with its commands. Errors, or None."""
    port = mpport.overlay(mp.root, build / "mpport") / "ports" / "esp32"
    trees = {name.replace("__", "/", 1): mpport.named_copy(root, build / "mpport-deps", name)
             for name, root in deps.items()}
    stood_in = mpport.merge_manifest(port, (XZ / "idf_component.yml").read_text(), trees,
                                     build / "mpport-stubs", *sr_deps)
    usermods = xz.parent / "micropython.cmake"
    if not usermods.exists():  # a lone copy of the module (--module)
        usermods = build / "usermods.cmake"
        usermods.write_text("include(%s/micropython.cmake)\n" % xz)
    log = build / "configure-port.log"
    out = build / "mp-idf"
    if mpport.configure(port, out, idf.root, toolchain, a.python, pypath, BOARD, usermods,
                        [stub_dir], log):
        print(tail(log, 40))
        fail(1, "MicroPython's ESP32 port did not configure (full log: %s)" % log)
        return None
    print("== MicroPython ports/esp32, MICROPY_BOARD_DIR=%s, USER_C_MODULES=%s"
          % (os.path.relpath(BOARD, ROOT), usermods))
    print("  component manager resolved %s; stand-ins for %s"
          % (config.resolved(port, idfproject.TARGET), ", ".join(stood_in)))
    if not config.print_sdkconfig(out / "config" / "sdkconfig.h"):
        return None
    cmds, extra = mpport.main_component_commands(out, files, xz)
    if extra:
        fail(1, "the port also compiles %s into the board firmware" % ", ".join(extra))
        return None
    no_io = [f.name for f in files if f in cmds and "XZ_HAVE_IO=1" not in cmds[f][1]]
    if no_io:
        fail(1, "the port compiles %s without XZ_HAVE_IO=1" % ", ".join(no_io))
        return None
    binding = [f for f in files if f.name.startswith("mod_")]
    if all(f in cmds for f in binding):
        made = mpgen.generate(mp.root, out, preprocessor(cmds[binding[0]]), binding)
        print("  genhdr: %(qstrs)d qstrs, %(modules)d module(s), %(texts)d error texts" % made)
    return compile_all(files, cmds)


def parse_args(argv):
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--idf", default=env("XZ_IDF_SRC"), help="ESP-IDF v5.4.x (env XZ_IDF_SRC)")
    p.add_argument("--esp-opus", default=env("XZ_ESP_OPUS_SRC"), help="78/esp-opus (env XZ_ESP_OPUS_SRC)")
    p.add_argument("--esp-audio-codec", default=env("XZ_ESP_AUDIO_CODEC_SRC"),
                   help="the esp_audio_codec component folder (env XZ_ESP_AUDIO_CODEC_SRC)")
    p.add_argument("--esp-sr", default=env("XZ_ESP_SR_SRC"),
                   help="espressif/esp-sr, the speech engine (env XZ_ESP_SR_SRC)")
    p.add_argument("--cjson", default=env("XZ_CJSON_SRC", "/usr/include/cjson"),
                   help="a folder with cJSON.h, for esp-sr's headers (env XZ_CJSON_SRC; default "
                        "Debian libcjson-dev's /usr/include/cjson)")
    p.add_argument("--micropython", default=env("MICROPY_SRC"), help="MicroPython source (env MICROPY_SRC)")
    p.add_argument("--idf-submodule", action="append", metavar="PATH=SOURCE",
                   default=[x for x in env("XZ_IDF_SUBMODULES", "").split(";") if x],
                   help="an ESP-IDF submodule for an extracted ESP-IDF, e.g. "
                        "components/heap/tlsf=TLSF_GITDIR@REF (env XZ_IDF_SUBMODULES, ';'-separated)")
    p.add_argument("--module", default=str(XZ), help="the xzaudio folder to compile (default: this tree's)")
    p.add_argument("--build", default=str(ROOT / "build" / "esp32-glue"))
    p.add_argument("--cc", default=env("CC", "gcc"))
    p.add_argument("--cxx", default=env("CXX", "g++"))
    p.add_argument("--newlib", default=env("XZ_NEWLIB_SRC"),
                   help="espressif/newlib-esp32, the board's C library (env XZ_NEWLIB_SRC)")
    p.add_argument("--python", default=sys.executable, help="the Python ESP-IDF's CMake runs")
    return p.parse_args(argv)


def fail(code, msg):
    print("check_esp32_glue: " + msg, file=sys.stderr)
    return code


def tail(path, n):
    return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])


def python_tools(build, python, needs):
    """None when every (module, requirement) in NEEDS imports as is, else a
    folder holding them (the missing ones installed there by pip once), or
    False."""
    def importable(module, env=None):
        return subprocess.run([python, "-c", "import " + module], capture_output=True,
                              env=env).returncode == 0
    if all(importable(m) for m, _ in needs):
        return None
    target = build / "py"
    env = dict(os.environ, PYTHONPATH=str(target))
    missing = [r for m, r in needs if not importable(m, env)]
    if missing:
        print("installing %s into %s (ESP-IDF's build tools)" % (", ".join(missing), target))
        r = subprocess.run([python, "-m", "pip", "install", "-q", "--target", str(target), *missing])
        if r.returncode or not all(importable(m, env) for m, _ in needs):
            return False
    return target


def fill_submodules(idf, specs, build):
    """Puts the given submodules into an extracted ESP-IDF (heap's tlsf: heap
    lists tlsf.c as a source, so CMake's generate step needs it)."""
    for item in specs:
        rel, _, spec = item.partition("=")
        if not spec:
            raise ValueError("%r is not PATH=SOURCE" % item)
        if not idf.extracted:
            raise ValueError("only for an ESP-IDF this tool extracted (%s is a checkout)" % idf.root)
        sub = sources.get(spec, build / "src" / "submodules" / rel.replace("/", "_"))
        where = idf.root / rel
        if rel not in idf.gitlinks:
            raise ValueError("%s is not a submodule of this ESP-IDF" % rel)
        # A gitlink's folder holds at most an earlier run's placeholder.
        if where.is_symlink():
            where.unlink()
        elif where.exists():
            shutil.rmtree(where)
        where.symlink_to(sub.root)
        print("ESP-IDF submodule %s: %s" % (rel, sub.describe))


def placeholder_submodules(idf, stubs):
    """In an extracted ESP-IDF, other absent submodules (heap's tlsf) get an
    empty include folder: their component lists it as an include path. A
    header the glue needed from one would fail the compile."""
    made = []
    if not idf.extracted:
        return made
    for rel in idf.gitlinks:
        parts = rel.split("/")
        where = idf.root / rel
        if where.is_symlink():
            continue  # filled by --idf-submodule
        if parts[0] == "components" and parts[1] not in stubs:
            (idf.root / rel / "include").mkdir(parents=True, exist_ok=True)
            made.append(rel)
    return made


if __name__ == "__main__":
    sys.exit(main())
