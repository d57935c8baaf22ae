#!/usr/bin/env python3
"""The board on the desk: runs the real firmware on the simulated board.

    make sim ARGS="--server ws://127.0.0.1:8000/xiaozhi/v1/ --json"
    .venv/bin/python tools/sim.py --state var/sim --pty --json

The firmware (firmware/main.py) runs as a child process on the host HAL,
under CPython or, with --micropython, on the real MicroPython unix port.
Console commands come from stdin (and from the pty with --pty):
wake [WORD], say TEXT, mic FILE.wav, phrase TEXT, button, status,
power_cut, warp SECONDS, reboot, quit. docs/sim.md is the contract:
options, commands, events and exit codes.
"""
import argparse
import json
import os
import queue
import re
import shutil
import signal
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import board_profiles  # noqa: E402
from simkit import alarm_clock, console, mic_input, provision, replies  # noqa: E402
from simkit.firmware_child import FirmwareChild  # noqa: E402
from simkit.pty_port import PtyPort  # noqa: E402
from simkit.text_console import describe  # noqa: E402

EXIT_OK, EXIT_CRASH, EXIT_USAGE = 0, 1, 2
SAMPLE_LESSON = os.path.join(ROOT, "tools", "simkit", "sample", "lesson1.mp3")
_MAC = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
SIM_COMMANDS = ("say", "mic", "power_cut", "help")
HELP = ("commands: wake [WORD] | say TEXT | mic FILE.wav | phrase TEXT | button | status | "
        "warp SECONDS | power_cut | reboot | quit")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="sim", description="Run the xiaozhi firmware on a simulated board.")
    p.add_argument("--server", help="ws:// WebSocket URL, or http:// OTA URL the device asks first")
    p.add_argument("--mqtt", metavar="HOST:PORT", help="MQTT broker of the parents' control plane "
                   "(mqtts://HOST:PORT: over TLS, checked against --ca)")
    p.add_argument("--ca", metavar="FILE", help="CA bundle (PEM or DER) the board checks wss://, mqtts:// "
                   "and https:// servers against (config.json tls.ca_file)")
    p.add_argument("--device-id", help="the board's MAC (aa:bb:cc:dd:ee:ff), kept in the state dir")
    p.add_argument("--state", default=os.path.join("var", "sim"), help="state directory kept between runs")
    p.add_argument("--advance", type=float, default=0, help="seconds that passed while the board was off")
    p.add_argument("--sd", help="directory to use as the SD card (default STATE/sd)")
    p.add_argument("--sample-lesson", action="store_true",
                   help="an empty SD card gets a sample lesson (lesson1.mp3; `make sim` passes it)")
    p.add_argument("--speed", type=float, help="run the simulated clock N times faster")
    p.add_argument("--json", action="store_true", help="one JSON event per line on stdout")
    p.add_argument("--pty", action="store_true", help="also serve the console on a pseudo-terminal")
    p.add_argument("--micropython", action="store_true", help="run on the MicroPython unix port")
    p.add_argument("--board", default=board_profiles.DEFAULT,
                   help="board profile, firmware/boards/NAME.json (default %s; known: %s)"
                   % (board_profiles.DEFAULT, ", ".join(board_profiles.known())))
    p.add_argument("--wake-on-alarm", action="store_true",
                   help="after standby, sleep until the RTC alarm and boot again (instead of exiting)")
    args = p.parse_args(argv)
    if args.device_id and not _MAC.match(args.device_id):
        p.error("--device-id must be a MAC like 02:00:00:00:00:01 (the xiaozhi device id)")
    if args.mqtt and not re.match(r"^(mqtts://)?[^:\s/]+:\d+$", args.mqtt):
        p.error("--mqtt must be HOST:PORT or mqtts://HOST:PORT")
    if args.ca and not os.path.isfile(args.ca):
        p.error("--ca %s: no such file (the CA bundle, PEM or DER)" % args.ca)
    if args.server and not re.match(r"^(wss?|https?)://", args.server):
        p.error("--server must be a ws://, wss:// or http:// URL")
    try:
        board_profiles.load(args.board)
    except board_profiles.ProfileError as e:
        p.error("--board: %s" % e)
    return args


def prepare_state(args):
    """Write the options the firmware reads from its flash: config.json and
    the MAC. Other keys in an existing config.json are kept."""
    state = os.path.abspath(args.state)
    os.makedirs(os.path.join(state, "sd"), exist_ok=True)
    card = os.path.abspath(args.sd) if args.sd else os.path.join(state, "sd")
    if getattr(args, "sample_lesson", False) and os.path.isdir(card) and not os.listdir(card):
        # A first `make sim`: something to play from the console's Now page
        # (a 1.5 s sample; the parent's own MP3 files go in the same folder).
        shutil.copy(SAMPLE_LESSON, os.path.join(card, "lesson1.mp3"))
        print("sim: the SD card %s was empty: it has a sample lesson, lesson1.mp3 (put MP3 lessons there)"
              % (card if os.path.relpath(card).startswith("..") else os.path.relpath(card)), file=sys.stderr)
    path = os.path.join(state, "config.json")
    cfg = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            try:
                cfg = json.load(f)
            except ValueError:
                cfg = {}
    if args.server:
        if args.server.startswith(("ws://", "wss://")):
            cfg["server_url"] = args.server
            cfg["ota_url"] = ""  # straight to the WebSocket, no OTA round
        else:
            cfg["ota_url"] = provision.ota_url(args.server)
            if cfg["ota_url"] != args.server:
                print("sim: asking the OTA URL %s" % cfg["ota_url"], file=sys.stderr)
    if args.ca:
        tls = cfg.get("tls") if isinstance(cfg.get("tls"), dict) else {}
        tls["ca_file"] = os.path.abspath(args.ca)
        cfg["tls"] = tls
    if args.device_id:
        with open(os.path.join(state, "mac"), "w") as f:
            f.write(args.device_id.replace(":", "").lower())
    if args.mqtt:
        mqtt = cfg.get("mqtt") if isinstance(cfg.get("mqtt"), dict) else {}
        mqtt["url"] = args.mqtt if args.mqtt.startswith("mqtts://") else "mqtt://" + args.mqtt
        cfg["mqtt"] = mqtt
        if not mqtt.get("user") and (args.server or "").startswith("http"):
            # The server's broker checks logins: ask the server for the board's.
            try:
                login = provision.credentials_when_up(
                    cfg["ota_url"], provision.board_mac(state), os.environ.get("XIAOZHI_API_TOKEN"),
                    say=lambda line: print(line, file=sys.stderr, flush=True), ca_file=args.ca)
                mqtt.update(user=login["username"], password=login["password"])
            except provision.ProvisionError as e:
                print("sim: the board has no broker login: %s" % e, file=sys.stderr)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=1)
    return state


def read_power_record(state):
    try:
        with open(os.path.join(state, "power.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


class Sim:
    def __init__(self, args, state):
        self.args = args
        self.state = state
        self.q = queue.Queue()
        self.fw = FirmwareChild(ROOT, state, micropython=args.micropython, speed=args.speed,
                                advance=args.advance, sd_dir=args.sd and os.path.abspath(args.sd),
                                board=board_profiles.path(args.board))
        self.replies = replies.ReplyWatcher(state)
        self.pty = None
        self._mic_n = 0
        self._out_lock = threading.Lock()

    # ---- output ----

    def emit(self, ev):
        line = json.dumps(ev, ensure_ascii=False)
        with self._out_lock:
            print(line if self.args.json else describe(ev), flush=True)
        if self.pty is not None:
            self.pty.write_line(line)

    def log(self, text):
        """A firmware log line: stderr with --json (stdout is JSON only)."""
        with self._out_lock:
            print(text, file=sys.stderr if self.args.json else sys.stdout, flush=True)
        if self.pty is not None:
            self.pty.write_line(text)

    # ---- input ----

    def _stdin(self):
        for line in sys.stdin:
            self.q.put(("cmd", line.strip()))
        # end of input changes nothing: the board runs on until standby or quit

    def command(self, line):
        cmd, _, arg = line.partition(" ")
        arg = arg.strip()
        if cmd == "power_cut":
            self.fw.power_cut()
        elif cmd == "say" and arg:
            threading.Thread(target=self._speak, args=(mic_input.speak_to_frames, arg), daemon=True).start()
        elif cmd == "mic" and arg:
            if os.path.isdir(arg):
                self.fw.send("mic " + os.path.abspath(arg))  # already Opus frames
            else:
                threading.Thread(target=self._speak, args=(mic_input.wav_to_frames, arg), daemon=True).start()
        elif cmd == "help":
            self.log(HELP)
        elif cmd:
            self.fw.send(line)

    def _speak(self, make, what):
        # Synthesis and encoding run beside the event loop: the board keeps talking meanwhile.
        self._mic_n += 1
        out = os.path.join(self.state, "mic", "%04d" % self._mic_n)
        try:
            make(what, out)
        except Exception as e:
            self.q.put(("event", {"event": "error", "message": "mic input %r: %s" % (what, e)}))
            return
        self.q.put(("cmd", "mic " + out))

    # ---- main loop ----

    def run(self):
        if self.args.pty:
            self.pty = PtyPort(lambda line: self.q.put(("cmd", line)))
            self.emit({"event": "pty", "path": self.pty.path})
        if not mic_input.sound_card_available():
            self.log("I sim: no sound card here: microphone from say/mic, speaker to WAV files")
        threading.Thread(target=self._stdin, daemon=True).start()
        self.fw.start(lambda text: self.q.put(("fw", text)))
        while True:
            kind, val = self.q.get()
            if kind == "cmd":
                self.command(val)
            elif kind == "event":
                self.emit(val)
            elif val is None:
                code = self._ended()
                if code is not None:
                    return code
            else:
                self._firmware_line(val)

    def _firmware_line(self, text):
        ev = console.parse(text)
        if ev is None:
            self.log(text)
            return
        if ev["event"] == "menu" or (ev["event"] == "state" and ev.get("previous") == "speaking"):
            # Replies are whole then: a server's reply is saved before the
            # state leaves speaking, a line the device says by itself (the
            # voice menu) before its menu event. Not on other state changes,
            # which may come while a line is still being played.
            self._report_replies()
        self.emit(ev)

    def _report_replies(self):
        for ev in self.replies.new_replies():
            self.emit(ev)

    def _ended(self):
        """The firmware process ended: why, and do we go on (a reboot)?"""
        rc = self.fw.returncode()
        self._report_replies()
        record = read_power_record(self.state)
        if self.fw.cut:
            reason, code = "power_cut", EXIT_OK
        elif rc == 0 and record and record.get("event") == "reset":
            self.fw.advance = None  # a reboot: the board boots again at once
            self.fw.start(lambda text: self.q.put(("fw", text)))
            return None
        elif rc == 0 and record and record.get("event") == "standby":
            wait = alarm_clock.seconds_to_alarm(self.state) if self.args.wake_on_alarm else None
            if wait is not None:
                # Asleep until the alarm: simulated time jumps there, the INT line wakes the board.
                self.emit({"event": "sleep", "seconds": wait})
                self.fw.advance = wait + 1
                self.fw.start(lambda text: self.q.put(("fw", text)))
                return None
            reason, code = "standby", EXIT_OK
        elif rc == 0:
            reason, code = "quit", EXIT_OK
        else:
            reason, code = "crash", EXIT_CRASH
            self.emit({"event": "error", "message": "firmware exited with status %s" % rc})
        self.emit({"event": "exit", "reason": reason, "code": code})
        if self.pty is not None:
            self.pty.close()
        return code


def main(argv=None):
    args = parse_args(argv)
    state = prepare_state(args)
    sim = Sim(args, state)
    # SIGTERM is a quit from outside: the board leaves the server cleanly.
    signal.signal(signal.SIGTERM, lambda *_: sim.q.put(("cmd", "quit")))
    try:
        return sim.run()
    except FileNotFoundError as e:
        print("sim: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        sim.fw.stop()
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
