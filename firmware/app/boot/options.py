# The board and its configuration, from the command line: asked once at
# start, then dropped (app/heap.py).
#
#   micropython firmware/main.py [--state DIR] [--sd DIR] [--speed N]
#                                [--advance SECONDS] [--config PATH]
#                                [--json] [--no-console] [--board NAME|FILE]
#
# Options matter on the host only (the board has one state: its flash):
# --state is the simulated board's state directory (NVS, RTC, SD, and
# config.json unless --config), --speed runs the simulated clock N times
# faster than real time, --advance is the time that passed while the board
# was off (an alarm that fell due meanwhile wakes it), --json prints one
# JSON event per line on stdout (always on the board: its UART console
# speaks that line protocol), --no-console leaves stdin alone, --board is
# the simulated board's profile (firmware/boards/NAME.json or a file; the
# board itself has its profile frozen in).
import sys

import hal
from app.boot import config as config_mod


def parse_args(argv):
    opts = {"state": "/tmp/xiaozhi-sim", "sd": None, "speed": None, "config": None,
            "advance": None, "json": sys.platform == "esp32", "console": True, "board": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--state", "--sd", "--speed", "--config", "--advance", "--board") and i + 1 < len(argv):
            opts[a[2:]] = argv[i + 1]
            i += 2
            continue
        if a == "--json":
            opts["json"] = True
        elif a == "--no-console":
            opts["console"] = False
        else:
            raise ValueError("unknown option %s" % a)
        i += 1
    return opts


def make_board(opts):
    """(board, configuration): config.json is read once, before the board,
    since the simulated board's clock speed may come from it."""
    if sys.platform == "esp32":
        return hal.board(), config_mod.load("/config.json")
    state = opts["state"]
    cfg = config_mod.load(opts["config"] or state.rstrip("/") + "/config.json")
    speed = float(opts["speed"]) if opts["speed"] else cfg.get("clock_speed", 1)
    kw = {"state_dir": state, "speed": speed}
    if opts["advance"]:
        kw["advance"] = float(opts["advance"])
    if opts["sd"]:
        kw["sd_dir"] = opts["sd"]
    if opts["board"]:
        kw["profile"] = opts["board"]
    return hal.board(**kw), cfg


def start(argv):
    """(options, board, configuration) for the command line argv."""
    opts = parse_args(argv)
    board, cfg = make_board(opts)
    return opts, board, cfg
