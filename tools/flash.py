#!/usr/bin/env python3
"""Build the board firmware, flash it, upload config and assets, verify.

    tools/flash.py [STEP ...] [--board NAME] [--port DEV] [--baud N] [--dry-run]
                   [--app-only] [--config FILE] [--assets DIR] [--esp-sr DIR]
                   [--model-image FILE] [--no-models] [--dev-image]

STEP is build, flash, upload or verify (default: all four in that order).
`--app-only` is for a board that already runs this project's MicroPython:
it skips build and flash and copies the app's Python files instead.
`--dry-run` prints every command exactly and runs none (lines starting
with `#` are notes, not commands). The build needs ESP-IDF (env IDF_PATH,
with its export.sh sourced so that idf.py is on PATH) and a MicroPython
checkout (env MICROPY_DIR); the speech models image needs esp-sr
(--esp-sr DIR or env ESP_SR); see docs/hardware.md. `--board NAME` picks
the board profile (firmware/boards/NAME.json) frozen into the image.
"""
import argparse
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tomllib

import board_profiles

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIRMWARE = ROOT / "firmware"
BOARD_DIR = FIRMWARE / "boards" / "XIAOZHI_SENING_S3"
PARTITIONS = FIRMWARE / "partitions.csv"
BUILD = ROOT / "build" / "firmware"
VERSION_MODULE = BUILD / "fwversion.py"
PROFILE_MODULE = BUILD / "board_profile.py"
MODEL_PARTITION = "model"  # the label esp_srmodel_init() reads by default
STAGE = BUILD / "upload"
CHIP = "esp32s3"
DEFAULT_BAUD = 460800
STEPS = ("build", "flash", "upload", "verify")

# USB bridges the board shows up through: (vid, pid) -> name.
USB_IDS = {
    (0x303A, 0x1001): "Espressif USB-JTAG/serial",
    (0x10C4, 0xEA60): "CP210x",
    (0x1A86, 0x7523): "CH340",
    (0x1A86, 0x55D4): "CH9102/CH343",
}

# The component-manager dependencies xzaudio needs in the port's main component.
XZAUDIO_DEPS = ("78/esp-opus", "espressif/esp_audio_codec")

IDF_HELP = ("ESP-IDF 5.2-5.4 is not installed: git clone -b v5.4 --recursive "
            "https://github.com/espressif/esp-idf.git, run ./install.sh esp32s3, "
            "then `. ./export.sh` and set IDF_PATH to that folder")
SR_HELP = ("esp-sr is needed for the speech models image: git clone "
           "https://github.com/espressif/esp-sr and set ESP_SR (or pass --esp-sr DIR); "
           "--no-models flashes without it (no wake word, no command words)")
MPY_HELP = ("a MicroPython source checkout (v1.22 or later) is needed: git clone "
            "https://github.com/micropython/micropython and set MICROPY_DIR to it")


class Stop(Exception):
    """A reason to stop before running anything more (printed, exit 2)."""


class Var(str):
    """An unset environment variable in a dry run, printed as $NAME unquoted."""


def show(argv):
    return " ".join(a if isinstance(a, Var) else shlex.quote(str(a)) for a in argv)


# ---------------------------------------------------------------- version

def repo_version(root=ROOT):
    """pyproject's version plus the commit, '.dirty' when firmware/ has
    uncommitted changes: the string the board must report after a flash."""
    with open(root / "pyproject.toml", "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no",
                                "--", "firmware"], cwd=root, capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return version
    return "%s+g%s%s" % (version, sha, ".dirty" if dirty else "")


def version_source(version):
    return "# Written by tools/flash.py: the firmware version.\nVERSION = %r\n" % version


def profile_source(profile):
    """The board profile as a frozen module: its strings become constants
    in flash, and nothing is parsed at boot (hal/profile.py: frozen())."""
    return ("# Written by tools/flash.py from firmware/boards/%s.json: the board profile.\n"
            "PROFILE = %r\n" % (profile["name"], profile))


# ------------------------------------------------------------------ ports

def detect_port(ports):
    """The one connected board among pyserial ListPortInfo-like objects."""
    found = [p for p in ports if (p.vid, p.pid) in USB_IDS]
    if len(found) == 1:
        return found[0].device
    if not found:
        raise Stop("no board found on USB (looked for %s): connect it or pass --port"
                   % ", ".join("%04x:%04x" % k for k in USB_IDS))
    raise Stop("several boards found (%s): pass --port"
               % ", ".join(p.device for p in found))


def serial_ports():
    from serial.tools import list_ports  # pyserial: only needed to auto-detect
    return list_ports.comports()


# ------------------------------------------------------------- partitions

def partition(name, table=PARTITIONS):
    """(offset, size) of a named partition in the CSV table."""
    for line in table.read_text().splitlines():
        cells = [c.strip() for c in line.split("#", 1)[0].split(",")]
        if len(cells) >= 5 and cells[0] == name:
            return int(cells[3], 0), int(cells[4], 0)
    raise KeyError(name)


# -------------------------------------------------------------- app files

def app_files():
    """{board path: local path} of what --app-only copies, laid out as the
    firmware imports it: lib modules and main.py at the root (the root is
    first on sys.path, before the frozen modules), hal without the host
    simulation, app as a package with its rooms (app/voice/, app/entry/, ...)."""
    out = {}
    for p in sorted((FIRMWARE / "lib").glob("*.py")):
        out[p.name] = p
    for p in sorted((FIRMWARE / "hal").glob("*.py")) + sorted((FIRMWARE / "hal" / "esp32").glob("*.py")):
        out[p.relative_to(FIRMWARE).as_posix()] = p
    for p in sorted((FIRMWARE / "app").rglob("*.py")):
        if "__pycache__" not in p.parts:
            out[p.relative_to(FIRMWARE).as_posix()] = p
    if (FIRMWARE / "main.py").exists():
        out["main.py"] = FIRMWARE / "main.py"
    out["fwversion.py"] = VERSION_MODULE
    out["board_profile.py"] = PROFILE_MODULE
    return out


def shadow_names():
    """Top-level board paths an --app-only upload creates: after a full
    flash they would shadow the new frozen modules, so they are removed."""
    return sorted({name.split("/")[0] for name in app_files()})


REMOVE_SNIPPET = """import os
def rm(p):
    try:
        if os.stat(p)[0] & 0x4000:
            for n in os.listdir(p):
                rm(p + "/" + n)
            os.rmdir(p)
        else:
            os.remove(p)
    except OSError:
        pass
for p in %s:
    rm(p)"""

VERSION_SNIPPET = "import fwversion; print(fwversion.VERSION)"


# ------------------------------------------------------------------- plan

class Plan:
    """Steps as (note, argv, action): argv is run, action is a local
    function called instead (e.g. writing a file); note is printed."""

    def __init__(self, args, env):
        self.args = args
        self.env = env
        self.items = []
        self.problems = []
        self.py = sys.executable

    def note(self, text):
        self.items.append(("# " + text, None, None))

    def run(self, argv):
        self.items.append((None, argv, None))

    def do(self, text, action):
        self.items.append(("# " + text, None, action))

    def envdir(self, name, help_text):
        value = self.env.get(name)
        if not value:
            self.problems.append("%s is not set: %s" % (name, help_text))
            return Var("$" + name)
        return value

    # -- build
    def build(self):
        idf = self.envdir("IDF_PATH", IDF_HELP)
        mpy = self.envdir("MICROPY_DIR", MPY_HELP)
        if not isinstance(idf, Var):
            if not (pathlib.Path(idf) / "tools" / "idf.py").exists():
                self.problems.append("IDF_PATH=%s has no tools/idf.py: %s" % (idf, IDF_HELP))
            elif not shutil.which("idf.py", path=self.env.get("PATH")):
                self.problems.append("idf.py is not on PATH: run `. %s/export.sh` first" % idf)
        if not isinstance(mpy, Var):
            self._check_micropython(pathlib.Path(mpy))
        if not (FIRMWARE / "main.py").exists():
            self.problems.append("firmware/main.py is missing: this tree has no firmware app to freeze")
        port = Var("$MICROPY_DIR/ports/esp32") if isinstance(mpy, Var) else mpy + "/ports/esp32"
        board = "BOARD_DIR=%s" % BOARD_DIR
        out = self.image_dir()
        make = ["make", "-C", port, board, "BUILD=%s" % out,
                "USER_C_MODULES=%s" % (FIRMWARE / "cmodules" / "micropython.cmake"),
                "FROZEN_MANIFEST=%s" % (FIRMWARE / "manifest.py")]
        if self.args.dev_image:
            make = ["env", "XIAOZHI_FREEZE_MAIN=0"] + make
        self.run(["make", "-C", Var("$MICROPY_DIR/mpy-cross") if isinstance(mpy, Var) else mpy + "/mpy-cross"])
        self.run(["make", "-C", port, board, "submodules"])
        version = self.version()
        self.do("write %s: VERSION = %r" % (VERSION_MODULE.relative_to(ROOT), version),
                lambda: self._write(VERSION_MODULE, version_source(version)))
        profile = self.args.profile
        self.do("write %s: the %s board profile" % (PROFILE_MODULE.relative_to(ROOT), profile["name"]),
                lambda: self._write(PROFILE_MODULE, profile_source(profile)))
        self.run(make)
        self.models_image()
        self.image_estimate()

    def image_estimate(self):
        """The app image's estimated size against the app partitions
        (tools/image_size.py: no Xtensa linker here, so it is an estimate)."""
        import image_size
        lines, _, _ = image_size.report_lines(PARTITIONS)
        for line in lines:
            self.note(line)

    # -- speech models: esp-sr's own packer, from the build's sdkconfig
    def models_image(self):
        if self.args.model_image or self.args.no_models:
            return
        sr = self.args.esp_sr or self.envdir("ESP_SR", SR_HELP)
        if not isinstance(sr, Var) and not (pathlib.Path(sr) / "model" / "movemodel.py").exists():
            self.problems.append("%s has no model/movemodel.py: %s" % (sr, SR_HELP))
        out = self.image_dir()
        self.run([self.py, Var("$ESP_SR/model/movemodel.py") if isinstance(sr, Var)
                  else "%s/model/movemodel.py" % sr,
                  "-d1", out / "sdkconfig", "-d2", sr, "-d3", out])

    def models_file(self):
        if self.args.model_image:
            return pathlib.Path(self.args.model_image)
        return self.image_dir() / "srmodels" / "srmodels.bin"

    def _check_micropython(self, mpy):
        if not (mpy / "ports" / "esp32" / "Makefile").exists():
            self.problems.append("MICROPY_DIR=%s is not a MicroPython checkout: %s" % (mpy, MPY_HELP))
            return
        # MicroPython >= 1.24 has one main component; older ones one per chip.
        manifest = mpy / "ports" / "esp32" / "main" / "idf_component.yml"
        if not manifest.exists():
            manifest = mpy / "ports" / "esp32" / "main_esp32s3" / "idf_component.yml"
        text = manifest.read_text() if manifest.exists() else ""
        missing = [d for d in XZAUDIO_DEPS if d not in text]
        if missing:
            self.problems.append("%s lacks %s: merge the dependencies of "
                                 "firmware/cmodules/xzaudio/idf_component.yml into it "
                                 "(docs/cmodule.md)" % (manifest, ", ".join(missing)))

    def image_dir(self):
        return BUILD / ("idf-dev" if self.args.dev_image else "idf")

    def version(self):
        if not hasattr(self, "_version"):
            self._version = repo_version()
        return self._version

    # -- flash
    def flash(self, port):
        image = self.image_dir() / "firmware.bin"
        argv = [self.py, "-m", "esptool", "--chip", CHIP, "--port", port,
                "--baud", str(self.args.baud), "write-flash", "0x0", image]
        if not self.args.no_models:
            offset, size = partition(MODEL_PARTITION)
            model = self.models_file()
            if model.exists() and model.stat().st_size > size:
                raise Stop("%s is %d bytes, the %s partition holds %d"
                           % (model, model.stat().st_size, MODEL_PARTITION, size))
            if not model.exists() and "build" not in self.args.steps:
                self.problems.append("%s does not exist: run `tools/flash.py build` (with ESP_SR) "
                                     "or pass --model-image FILE or --no-models" % model)
            argv += ["0x%x" % offset, model]
        if "build" not in self.args.steps and not image.exists():
            self.problems.append("%s does not exist: run `tools/flash.py build` first" % image)
        self.run(argv)
        # Files left by an earlier --app-only upload would shadow the new
        # frozen modules (the filesystem root comes first on sys.path).
        self.run(self.mpremote(port, "exec", REMOVE_SNIPPET % json.dumps(["/" + n for n in shadow_names()])))

    # -- upload
    def upload(self, port):
        names = []
        if self.args.config:
            names.append("config.json")
        if self.args.assets:
            names.append("assets")
        if self.args.app_only or self.args.dev_image:
            names += shadow_names()
        if not names:
            self.note("upload: nothing to copy (no --config, no assets folder)")
            return
        self.do("stage the files in %s" % STAGE.relative_to(ROOT), self._stage)
        self.run(self.mpremote(port, "fs", "cp", "-r") + [STAGE / n for n in sorted(names)] + [":"])

    def _stage(self):
        if STAGE.exists():
            shutil.rmtree(STAGE)
        STAGE.mkdir(parents=True)
        if self.args.config:
            config = pathlib.Path(self.args.config)
            json.loads(config.read_text())  # a broken config would brick the boot
            shutil.copyfile(config, STAGE / "config.json")
        if self.args.assets:
            shutil.copytree(self.args.assets, STAGE / "assets",
                            ignore=shutil.ignore_patterns("__pycache__", ".*"))
        if self.args.app_only or self.args.dev_image:
            self._write(VERSION_MODULE, version_source(self.version()))
            self._write(PROFILE_MODULE, profile_source(self.args.profile))
            for name, src in app_files().items():
                dst = STAGE / name
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)

    # -- verify
    def verify(self, port):
        expected = self.version()
        argv = self.mpremote(port, "exec", VERSION_SNIPPET)
        self.do("expect the board to print %s" % expected, None)
        self.items.append((None, argv, ("expect", expected)))
        self.run(self.mpremote(port, "reset"))

    def stop_if_blocked(self):
        """A real run checks everything it needs before it runs anything."""
        if self.problems and not self.args.dry_run:
            raise Stop("cannot build and flash the firmware:\n  - " + "\n  - ".join(self.problems))

    def mpremote(self, port, *words):
        return [self.py, "-m", "mpremote", "connect", port] + list(words)

    @staticmethod
    def _write(path, text):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def run_plan(plan, dry_run):
    for note, argv, action in plan.items:
        if note:
            print(note, flush=True)
        if argv is None:
            if action and not dry_run:
                action()
            continue
        print(show(argv), flush=True)
        if dry_run:
            continue
        if isinstance(action, tuple):
            out = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
            got = out.stdout.strip().splitlines()[-1:] or [""]
            if out.returncode != 0 or got[0].strip() != action[1]:
                raise Stop("verify failed: the board reports %r, this tree is %r%s"
                           % (got[0].strip(), action[1], (": " + out.stderr.strip()) if out.stderr.strip() else ""))
            print("# verified: the board runs %s" % action[1])
            continue
        code = subprocess.run([str(a) for a in argv]).returncode
        if code != 0:
            raise Stop("command failed with exit code %d: %s" % (code, show(argv)))


# -------------------------------------------------------------------- cli

def parse(argv):
    ap = argparse.ArgumentParser(prog="flash.py", description=__doc__.split("\n")[0])
    ap.add_argument("steps", nargs="*", metavar="STEP",
                    help="build, flash, upload, verify (default: all)")
    ap.add_argument("--port", help="serial device (default: detect by USB VID/PID)")
    ap.add_argument("--baud", type=int, default=DEFAULT_BAUD, help="esptool baud rate")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run none")
    ap.add_argument("--app-only", action="store_true",
                    help="no build/flash: copy the app files to a board running our MicroPython")
    ap.add_argument("--config", help="config.json to upload (Wi-Fi, server URL, token)")
    ap.add_argument("--assets", help="folder copied to /assets (default: firmware/assets if present)")
    ap.add_argument("--board", default=board_profiles.DEFAULT,
                    help="board profile firmware/boards/NAME.json (default %s; known: %s)"
                    % (board_profiles.DEFAULT, ", ".join(board_profiles.known())))
    ap.add_argument("--esp-sr", help="esp-sr checkout whose model/movemodel.py packs the speech "
                    "models (default: env ESP_SR)")
    ap.add_argument("--model-image", help="a ready speech models image (srmodels.bin) for the "
                    "model partition, instead of packing one")
    ap.add_argument("--no-models", action="store_true",
                    help="leave the model partition alone (no wake word, no command words)")
    ap.add_argument("--dev-image", action="store_true",
                    help="build without a frozen main.py, for boards updated by --app-only")
    args = ap.parse_args(argv)
    unknown = [s for s in args.steps if s not in STEPS]
    if unknown:
        ap.error("unknown step %s (steps: %s)" % (", ".join(unknown), ", ".join(STEPS)))
    steps = [s for s in STEPS if s in args.steps] or list(STEPS)
    if args.app_only:
        steps = [s for s in steps if s not in ("build", "flash")]
    args.steps = steps
    try:
        args.profile = board_profiles.load(args.board)
    except board_profiles.ProfileError as e:
        print("flash.py: %s" % e, file=sys.stderr)
        sys.exit(2)
    if args.assets is None and (FIRMWARE / "assets").is_dir():
        args.assets = str(FIRMWARE / "assets")
    return args


def main(argv=None, env=None, ports=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    plan = Plan(args, os.environ if env is None else env)
    try:
        if "build" in args.steps:
            plan.build()
            plan.stop_if_blocked()
        needs_port = [s for s in args.steps if s != "build"]
        port = args.port
        if needs_port and not port:
            port = detect_port(serial_ports() if ports is None else ports)
            plan.note("port %s (detected by USB id)" % port)
        for step in needs_port:
            getattr(plan, step)(port)
        plan.stop_if_blocked()
        for p in reversed(plan.problems):
            plan.items.insert(0, ("# a real run stops here: " + p, None, None))
        run_plan(plan, args.dry_run)
    except Stop as e:
        print("flash.py: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
