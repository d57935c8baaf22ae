"""tools/flash.py as a user runs it: the commands a dry run prints, port
detection over pyserial port records, and the failure without ESP-IDF
(directly and through `make flash`)."""
import importlib.util
import json
import os
import shlex
import subprocess
import sys

import pytest
from serial.tools.list_ports_common import ListPortInfo

from testkit import ROOT

FLASH = ROOT / "tools" / "flash.py"
PY = sys.executable
BOARD = ROOT / "firmware" / "boards" / "XIAOZHI_SENING_S3"
IMAGE = ROOT / "build" / "firmware" / "idf" / "firmware.bin"


def load_flash():
    spec = importlib.util.spec_from_file_location("flash_tool", FLASH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


flash = load_flash()


def clean_env(**extra):
    """The environment of a machine with no ESP-IDF and no MicroPython tree."""
    env = {k: v for k, v in os.environ.items() if k not in ("IDF_PATH", "MICROPY_DIR", "ESP_SR")}
    env.update(extra)
    return env


def run(*args, env=None):
    return subprocess.run([PY, str(FLASH), *args], capture_output=True, text=True,
                          cwd=ROOT, env=env or clean_env(), timeout=60)


def commands(stdout):
    return [line for line in stdout.splitlines() if line and not line.startswith("#")]


def port_info(device, vid=None, pid=None, description="n/a"):
    p = ListPortInfo(device, skip_link_detection=True)
    p.vid, p.pid, p.description = vid, pid, description
    return p


def test_dry_run_prints_the_exact_build_esptool_and_mpremote_commands(tmp_path):
    mpy = tmp_path / "micropython"
    out = run("--dry-run", "--port", "/dev/ttyUSB0",
              env=clean_env(IDF_PATH=str(tmp_path / "esp-idf"), MICROPY_DIR=str(mpy)))
    assert out.returncode == 0, out.stderr
    version = flash.repo_version()
    remove = flash.REMOVE_SNIPPET % json.dumps(["/" + n for n in flash.shadow_names()])
    assert commands(out.stdout) == [
        "make -C %s/mpy-cross" % mpy,
        "make -C %s/ports/esp32 BOARD_DIR=%s submodules" % (mpy, BOARD),
        "make -C %s/ports/esp32 BOARD_DIR=%s BUILD=%s USER_C_MODULES=%s FROZEN_MANIFEST=%s"
        % (mpy, BOARD, IMAGE.parent, ROOT / "firmware/cmodules/micropython.cmake",
           ROOT / "firmware/manifest.py"),
        # esp-sr's own packer makes the speech models image from the build's sdkconfig
        "%s $ESP_SR/model/movemodel.py -d1 %s -d2 $ESP_SR -d3 %s" % (PY, IMAGE.parent / "sdkconfig", IMAGE.parent),
        "%s -m esptool --chip esp32s3 --port /dev/ttyUSB0 --baud 460800 write-flash 0x0 %s 0x800000 %s"
        % (PY, IMAGE, IMAGE.parent / "srmodels" / "srmodels.bin"),
    ] + shlex.join([PY, "-m", "mpremote", "connect", "/dev/ttyUSB0", "exec", remove]).splitlines() + [
        # firmware/assets (the protocol's schema table, the command words) goes to /assets
        "%s -m mpremote connect /dev/ttyUSB0 fs cp -r %s :" % (PY, ROOT / "build/firmware/upload/assets"),
        "%s -m mpremote connect /dev/ttyUSB0 exec 'import fwversion; print(fwversion.VERSION)'" % PY,
        "%s -m mpremote connect /dev/ttyUSB0 reset" % PY,
    ]
    # the paths given do not exist: the dry run says a real run would stop
    assert "# a real run stops here: IDF_PATH=%s has no tools/idf.py" % (tmp_path / "esp-idf") in out.stdout
    assert "# expect the board to print %s" % version in out.stdout
    assert "# write build/firmware/board_profile.py: the sening board profile" in out.stdout
    assert "# a real run stops here: ESP_SR is not set" in out.stdout


def test_dry_run_runs_nothing_and_writes_nothing(tmp_path):
    version_file = ROOT / "build" / "firmware" / "fwversion.py"
    before = version_file.stat().st_mtime_ns if version_file.exists() else None
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    marker = tmp_path / "ran"
    for tool in ("make", "env"):  # would leave a mark if the dry run ran them
        (fake_bin / tool).write_text("#!/bin/sh\ntouch %s\n" % marker)
        (fake_bin / tool).chmod(0o755)
    env = clean_env(PATH="%s:%s" % (fake_bin, os.environ["PATH"]), MICROPY_DIR=str(tmp_path))
    out = run("--dry-run", "--port", "/dev/ttyUSB0", "--dev-image", env=env)
    assert out.returncode == 0, out.stderr
    assert not marker.exists()
    after = version_file.stat().st_mtime_ns if version_file.exists() else None
    assert before == after
    build = [c for c in commands(out.stdout) if "FROZEN_MANIFEST" in c]
    assert build and build[0].startswith("env XIAOZHI_FREEZE_MAIN=0 make -C ")
    assert "BUILD=%s" % (ROOT / "build/firmware/idf-dev") in build[0]


def test_dry_run_without_toolchain_names_the_variables_and_keeps_them_unexpanded():
    out = run("--dry-run", "--port", "/dev/ttyACM0")
    assert out.returncode == 0, out.stderr
    cmds = commands(out.stdout)
    assert cmds[0] == "make -C $MICROPY_DIR/mpy-cross"
    assert cmds[2].startswith("make -C $MICROPY_DIR/ports/esp32 BOARD_DIR=")
    assert "# a real run stops here: IDF_PATH is not set: ESP-IDF" in out.stdout
    assert "# a real run stops here: MICROPY_DIR is not set" in out.stdout


def test_app_only_dry_run_skips_build_and_esptool_and_copies_the_app(tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"wifi_ssid": "home", "server_url": "ws://192.168.1.2:8000/xiaozhi/v1/"}')
    out = run("--app-only", "--dry-run", "--port", "/dev/ttyACM0", "--config", str(config))
    assert out.returncode == 0, out.stderr
    cmds = commands(out.stdout)
    assert not any(c.startswith("make ") or " esptool " in c for c in cmds)
    stage = ROOT / "build" / "firmware" / "upload"
    names = sorted(["config.json", "assets"] + flash.shadow_names())
    assert cmds[0] == shlex.join([PY, "-m", "mpremote", "connect", "/dev/ttyACM0", "fs", "cp", "-r"]
                                 + [str(stage / n) for n in names] + [":"])
    assert cmds[1:] == [
        "%s -m mpremote connect /dev/ttyACM0 exec 'import fwversion; print(fwversion.VERSION)'" % PY,
        "%s -m mpremote connect /dev/ttyACM0 reset" % PY,
    ]
    # what lands on the board: lib modules and main.py at the root, the
    # esp32 HAL but not the host simulation, the app package and its rooms, the version
    files = flash.app_files()
    assert "ws.py" in files and "proto.py" in files and "main.py" in files
    assert "hal/esp32/board.py" in files and "hal/__init__.py" in files
    assert not any(k.startswith("hal/host") for k in files)
    assert "app/voice/state.py" in files and "app/entry/__init__.py" in files   # the rooms, as packages
    assert not any("__pycache__" in k for k in files)
    assert set(names) >= {"app", "hal", "main.py", "fwversion.py", "config.json", "assets"}


@pytest.mark.parametrize("board", ["sening", "esp32-s3-box-3", "bread-compact"])
def test_make_flash_dry_run_per_board_freezes_its_profile_and_writes_the_models(board, tmp_path):
    out = subprocess.run(["make", "-s", "flash", "BOARD=" + board, "PORT=/dev/ttyUSB0", "ARGS=--dry-run"],
                         capture_output=True, text=True, cwd=ROOT, env=clean_env(ESP_SR=str(tmp_path / "sr")),
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "# write build/firmware/board_profile.py: the %s board profile" % board in out.stdout
    cmds = commands(out.stdout)
    assert "%s %s/model/movemodel.py -d1 %s -d2 %s -d3 %s" % (
        PY, tmp_path / "sr", IMAGE.parent / "sdkconfig", tmp_path / "sr", IMAGE.parent) in cmds
    assert any(c.endswith("write-flash 0x0 %s 0x800000 %s" % (IMAGE, IMAGE.parent / "srmodels/srmodels.bin"))
               for c in cmds)
    # what the build freezes is that board's profile, exactly
    profile = flash.board_profiles.load(board)
    ns = {}
    exec(flash.profile_source(profile), ns)
    assert ns["PROFILE"] == profile


def test_unknown_board_is_refused_naming_the_known_ones():
    out = subprocess.run(["make", "-s", "flash", "BOARD=box-9", "ARGS=--dry-run"], capture_output=True,
                         text=True, cwd=ROOT, env=clean_env(), timeout=120)
    assert out.returncode != 0
    assert "unknown board 'box-9'; known boards: bread-compact, esp32-s3-box-3, sening" in out.stderr
    out = run("--board", "box-9", "--dry-run")
    assert out.returncode == 2 and "known boards: bread-compact" in out.stderr


def test_no_models_leaves_the_model_partition_alone():
    out = run("flash", "--dry-run", "--port", "/dev/ttyUSB0", "--no-models")
    assert [c for c in commands(out.stdout) if " esptool " in c] == [
        "%s -m esptool --chip esp32s3 --port /dev/ttyUSB0 --baud 460800 write-flash 0x0 %s" % (PY, IMAGE)]


def test_model_image_goes_to_the_model_partition(tmp_path):
    model = tmp_path / "srmodels.bin"
    model.write_bytes(b"\0" * 4096)
    out = run("flash", "--dry-run", "--port", "/dev/ttyUSB0", "--model-image", str(model))
    assert out.returncode == 0, out.stderr
    esptool = [c for c in commands(out.stdout) if " esptool " in c]
    offset, _ = flash.partition("model")
    assert esptool == ["%s -m esptool --chip esp32s3 --port /dev/ttyUSB0 --baud 460800 "
                       "write-flash 0x0 %s 0x%x %s" % (PY, IMAGE, offset, model)]
    assert offset == 0x800000


def test_model_image_larger_than_its_partition_is_refused(tmp_path):
    model = tmp_path / "huge.bin"
    _, size = flash.partition("model")
    with open(model, "wb") as f:
        f.truncate(size + 1)
    out = run("flash", "--dry-run", "--port", "/dev/ttyUSB0", "--model-image", str(model))
    assert out.returncode == 2
    assert "the model partition holds %d" % size in out.stderr


def test_baud_is_configurable():
    out = run("flash", "--dry-run", "--port", "/dev/ttyUSB0", "--baud", "921600")
    assert "--baud 921600 write-flash 0x0" in out.stdout


def test_auto_detect_picks_the_board_among_other_serial_ports():
    ports = [port_info("/dev/ttyS0"),
             port_info("/dev/ttyUSB3", 0x0403, 0x6001, "FT232R"),  # an FTDI cable, not a board
             port_info("/dev/ttyACM1", 0x303A, 0x1001, "USB JTAG/serial debug unit")]
    assert flash.detect_port(ports) == "/dev/ttyACM1"
    for vid, pid in ((0x10C4, 0xEA60), (0x1A86, 0x7523), (0x1A86, 0x55D4)):
        assert flash.detect_port([ports[1], port_info("/dev/ttyUSB0", vid, pid)]) == "/dev/ttyUSB0"


def test_auto_detect_refuses_to_guess(capsys):
    with pytest.raises(flash.Stop, match="no board found"):
        flash.detect_port([port_info("/dev/ttyS0"), port_info("/dev/ttyUSB3", 0x0403, 0x6001)])
    two = [port_info("/dev/ttyACM0", 0x303A, 0x1001), port_info("/dev/ttyUSB0", 0x1A86, 0x7523)]
    with pytest.raises(flash.Stop, match="several boards found.*ttyACM0.*ttyUSB0"):
        flash.detect_port(two)


def test_detected_port_is_used_in_every_command(capsys):
    ports = [port_info("/dev/ttyUSB7", 0x10C4, 0xEA60, "CP2102N")]
    code = flash.main(["flash", "verify", "--dry-run"], env=clean_env(), ports=ports)
    out = capsys.readouterr().out
    assert code == 0
    assert "# port /dev/ttyUSB7 (detected by USB id)" in out
    cmds = commands(out)
    assert cmds and all("/dev/ttyUSB7" in c for c in cmds if "esptool" in c or "mpremote" in c)


def test_real_run_without_esp_idf_fails_naming_what_to_install():
    out = run("--port", "/dev/ttyUSB0")
    assert out.returncode != 0
    assert "IDF_PATH is not set" in out.stderr and "ESP-IDF" in out.stderr
    assert "install.sh esp32s3" in out.stderr and "export.sh" in out.stderr
    assert "MICROPY_DIR is not set" in out.stderr
    assert "esptool" not in out.stdout  # stopped before flashing anything


def test_real_run_with_esp_idf_but_not_exported_says_to_source_export(tmp_path):
    idf = tmp_path / "esp-idf"
    (idf / "tools").mkdir(parents=True)
    (idf / "tools" / "idf.py").write_text("")
    out = run("build", env=clean_env(IDF_PATH=str(idf), PATH="/usr/bin:/bin"))
    assert out.returncode != 0
    assert "idf.py is not on PATH: run `. %s/export.sh` first" % idf in out.stderr


def test_make_flash_without_esp_idf_fails_the_same_way():
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
    out = subprocess.run(["make", "--no-print-directory", "flash", "PORT=/dev/ttyUSB0"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert "IDF_PATH is not set" in out.stderr and "ESP-IDF" in out.stderr
    assert "MICROPY_DIR is not set" in out.stderr


def test_unknown_step_is_a_usage_error():
    out = run("burn", "--dry-run", "--port", "/dev/ttyUSB0")
    assert out.returncode == 2 and "unknown step burn" in out.stderr
