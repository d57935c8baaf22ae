# Hardware abstraction: the app asks `hal.board()` for its hardware and
# never constructs machine/esp32/network objects itself.
#
#   import hal
#   b = hal.board()
#   b.nvs("xiaozhi"), b.sd, b.i2c, b.rtc_int, b.power, b.clock,
#   b.mic, b.speaker, b.wifi, b.buttons, b.voice
#
# On the ESP32 (`sys.platform == "esp32"`) this is hal.esp32; everywhere
# else the host simulation hal.host (options: state_dir, sd_dir, advance,
# speed, wake, ...). One board per process: later calls return the same one.
import sys

_board = []


def board(**opts):
    if not _board:
        if sys.platform == "esp32":
            from hal.esp32 import board as make
        else:
            from hal.host import board as make
        _board.append(make(**opts))
    return _board[0]


def reset_for_tests():
    """Forget the board so a test can build a fresh one (host only)."""
    del _board[:]
