"""An ESP-IDF project around the glue, configured by ESP-IDF's own CMake.

There is no Xtensa compiler on the project's machines, so a host gcc with
-m32 (the ESP32-S3's ILP32 sizes) stands in for xtensa-esp32s3-elf-gcc:
ESP-IDF's CMake runs kconfgen (the real sdkconfig.h for esp32s3 from the
real Kconfig tree), resolves the components' requirements and writes
compile_commands.json, so every include path and definition is the one an
ESP-IDF build would use. The glue is then compiled with those commands as
far as assembly text (-S), for the host: Xtensa inline assembly in the
FreeRTOS headers is copied as text and never assembled, no Xtensa code is
generated, and nothing is linked.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

TARGET = "esp32s3"
# Xtensa code generation flags ESP-IDF adds that a host gcc does not know.
XTENSA_ONLY = ("-mlongcalls", "-mdisable-hardware-atomics", "-mtext-section-literals",
               "-mfix-esp32-psram-cache-issue")
BINUTILS = ("ar", "ranlib", "objcopy", "objdump", "nm", "size", "strip", "readelf", "ld")
# Components whose CMakeLists need their submodule's sources at configure
# time; the glue includes none of their headers, so an empty stand-in
# component of the same name takes their place when the submodule is absent.
STUBBABLE = ("mbedtls", "mqtt", "bt", "lwip", "esp_wifi", "esp_phy", "esp_coex", "openthread",
             "spiffs", "json", "protobuf-c", "unity", "cmock")

# What the Xtensa compiler predefines and the host's does not: the target
# (headers choose their Xtensa branches on __XTENSA__), no Linux/x86, and
# 32-bit integer types that are long (as in Espressif's toolchain since
# ESP-IDF 5.0), so format and pointer-type checks see what the board's
# compiler sees. The C library is newlib (newlib.py), not glibc.
TARGET_MACROS = ("-D__XTENSA__=1 -D__xtensa__=1 -D__XTENSA_EL__=1 -D__XTENSA_WINDOWED_ABI__=1 "
                "-U__i386__ -U__i386 -Ui386 -U__linux__ -U__linux -Ulinux -U__gnu_linux__ "
                "-U__unix__ -U__unix -Uunix "
                "-U__INT32_TYPE__ -D__INT32_TYPE__='long int' "
                "-U__UINT32_TYPE__ -D__UINT32_TYPE__='long unsigned int' "
                "-U__INT_LEAST32_TYPE__ -D__INT_LEAST32_TYPE__='long int' "
                "-U__UINT_LEAST32_TYPE__ -D__UINT_LEAST32_TYPE__='long unsigned int'")

WRAPPER = """#!/bin/sh
# Stands in for {prefix}{tool}: the glue check configures and compiles to text only (docs/cmodule.md).
[ "$1" = -dumpmachine ] && {{ echo {prefix_bare}; exit 0; }}
for a do
  shift
  case "$a" in {drop}) ;; *) set -- "$@" "$a" ;; esac
done
exec {cc} -m32 -nostdinc -isystem "$({cc} -m32 -print-file-name=include)" -isystem {libc} \
    {macros} "$@"
"""


def write_toolchain(folder, cc, cxx, libc):
    prefix = "xtensa-%s-elf-" % TARGET
    folder.mkdir(parents=True, exist_ok=True)
    for tool, real in (("gcc", cc), ("g++", cxx)):
        path = folder / (prefix + tool)
        path.write_text(WRAPPER.format(prefix=prefix, tool=tool, prefix_bare=prefix[:-1],
                                       drop="|".join(XTENSA_ONLY), cc=real,
                                       libc=libc, macros=TARGET_MACROS))
        path.chmod(0o755)
    for tool in BINUTILS:
        link = folder / (prefix + tool)
        real = shutil.which(tool)
        if real and not link.exists():
            link.symlink_to(real)


def missing_submodule_stubs(idf):
    """Components to replace by empty stand-ins: those with a submodule
    that is absent (empty folder) in this ESP-IDF tree."""
    gm = idf / ".gitmodules"
    if not gm.exists():
        return []
    stubs = set()
    for line in gm.read_text().splitlines():
        line = line.strip()
        if not line.startswith("path = components/"):
            continue
        rel = line.split("=", 1)[1].strip()
        comp = rel.split("/")[1]
        sub = idf / rel
        if not (sub.is_dir() and any(sub.iterdir())) and comp in STUBBABLE:
            stubs.add(comp)
    return sorted(stubs)


def write_project(proj, components, sources, include_dirs, requires, defines, sdkconfig_defaults):
    """components: {name: folder} linked into the project's components/."""
    (proj / "main").mkdir(parents=True, exist_ok=True)
    comp_dir = proj / "components"
    if comp_dir.exists():
        shutil.rmtree(comp_dir)
    comp_dir.mkdir()
    for name, folder in components.items():
        (comp_dir / name).symlink_to(folder)
    (proj / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\n"
        "set(SDKCONFIG ${CMAKE_BINARY_DIR}/sdkconfig)\n"
        "set(SDKCONFIG_DEFAULTS %s)\n"
        "set(COMPONENTS main)\n"
        "include($ENV{IDF_PATH}/tools/cmake/project.cmake)\n"
        "project(xzglue)\n" % _cmake_list(sdkconfig_defaults))
    (proj / "main" / "CMakeLists.txt").write_text(
        "idf_component_register(SRCS %s\n    INCLUDE_DIRS %s\n    REQUIRES %s)\n"
        "target_compile_definitions(${COMPONENT_LIB} PRIVATE %s)\n"
        % (_cmake_list(sources), _cmake_list(include_dirs), " ".join(requires), " ".join(defines)))


def _cmake_list(items):
    return " ".join('"%s"' % str(i) for i in items)


def configure(proj, build, idf, toolchain, python, pythonpath, log, extra_dirs=()):
    env = dict(os.environ, IDF_PATH=str(idf), IDF_COMPONENT_MANAGER="0",
               PATH="%s:%s" % (toolchain, os.environ.get("PATH", "")),
               PYTHONPATH=os.pathsep.join(filter(None, [str(pythonpath or ""),
                                                        os.environ.get("PYTHONPATH", "")])))
    cmd = ["cmake", "-G", "Ninja", "-S", str(proj), "-B", str(build),
           "-DIDF_TARGET=" + TARGET, "-DPYTHON=" + python, "-DPYTHON_DEPS_CHECKED=1",
           # The stand-in compiler cannot link for the target; nothing is linked.
           "-DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY",
           "-DEXTRA_COMPONENT_DIRS=" + ";".join(str(d) for d in extra_dirs)]
    with open(log, "w") as f:
        rc = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT).returncode
    return rc


def commands_for(build, files):
    """The compile command ESP-IDF would run for each of FILES."""
    entries = json.loads((build / "compile_commands.json").read_text())
    wanted = {str(Path(f).resolve()): f for f in files}
    out = {}
    for e in entries:
        path = str(Path(e["directory"], e["file"]).resolve())
        if path in wanted:
            out[wanted[path]] = (e["directory"], e["command"])
    return out
