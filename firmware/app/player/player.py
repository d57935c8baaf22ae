# The SD-card MP3 repeat player (docs/firmware.md, Player rules).
#
#   p = RepeatPlayer(board.sd, backend, board.clock, request_standby)
#   p.play("lesson1.mp3", repeat=2, power_off_after=True)
#       -> {"accepted": True, "status": "playing"} at once
#
# Rules:
# - names only from files() (the MP3s on the card); anything else, "../x"
#   or absolute paths included, is refused with PlayerError;
# - repeat is an int >= 1 (bool and float refused), at most MAX_REPEAT;
# - the same name again within DUPLICATE_WINDOW_MS of its start, while it
#   still plays, is "duplicate_ignored" (an LLM calling the tool twice);
# - a pass counts only when the file ends naturally;
# - stop() (the tool, a wake word, a button) cancels the remaining passes
#   and the power-off;
# - a TTS reply pauses the file (pause_for_reply) and resumes it after
#   `tts stop` (resume_after_reply), but the interruption cancels the
#   remaining passes and the power-off: only the current pass finishes;
# - after the last natural end with power_off_after, request_standby
#   ("repeat_done") takes the same path as the self.power_off tool.
# Listeners get (event, info): playing, paused, resumed, pass_end, stopped,
# done; info = {"name", "pass", "repeat_left"}.
import log
import proto

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

MAX_REPEAT = const(100)
IDLE = "idle"
PLAYING = "playing"
PAUSED = "paused"

_log = log.get("player")


class PlayerError(ValueError):
    pass


def check_repeat(repeat):
    # bool is an int subclass in Python: True must not mean one pass.
    if isinstance(repeat, bool) or not isinstance(repeat, int):
        raise PlayerError("repeat must be an integer >= 1, got %r" % (repeat,))
    if repeat < 1 or repeat > MAX_REPEAT:
        raise PlayerError("repeat must be between 1 and %d, got %d" % (MAX_REPEAT, repeat))


class RepeatPlayer:
    def __init__(self, sd, backend, clock, request_standby=None):
        self._sd = sd
        self._mp3 = backend
        self._clock = clock
        self._standby = request_standby
        self._listeners = []
        backend.on_end = self._on_natural_end
        self.state = IDLE
        self.name = None
        self.repeat_left = 0    # passes not yet finished, the current one included
        self.passes = 0         # natural ends of the current play request
        self.power_off_after = False
        self._started_at = 0
        self._paused_by_reply = False

    def listen(self, fn):
        self._listeners.append(fn)

    def _emit(self, event):
        info = {"name": self.name, "pass": self.passes, "repeat_left": self.repeat_left}
        _log.info("%s %s pass=%d left=%d", event, self.name, self.passes, self.repeat_left)
        for fn in self._listeners:
            try:
                fn(event, info)
            except Exception as e:
                _log.error("player listener failed: %r", e)

    # ---- requests ----

    def files(self):
        return self._sd.list(suffix=".mp3")

    def listing(self):
        """self.mp3.get_list's entries in the Sening shape: name (what play
        takes) and size in bytes, one stat per file."""
        out = []
        for n in self.files():
            try:
                out.append({"name": n, "size": self._sd.size(n)})
            except OSError:
                pass  # removed since the listing: not playable either
        return out

    def play(self, name, repeat=1, power_off_after=False):
        check_repeat(repeat)
        if not isinstance(power_off_after, bool):
            raise PlayerError("power_off_after must be true or false")
        if not isinstance(name, str) or name not in self.files():
            raise PlayerError("no MP3 named %r on the SD card (see self.mp3.get_list)" % (name,))
        now = self._clock.ticks_ms()
        if (self.state != IDLE and name == self.name
                and self._clock.ticks_diff(now, self._started_at) < proto.DUPLICATE_WINDOW_MS):
            return {"accepted": True, "status": "duplicate_ignored"}
        if self.state != IDLE:
            self.stop()
        self.name = name
        self.repeat_left = repeat
        self.passes = 0
        self.power_off_after = power_off_after
        self._started_at = now
        self._paused_by_reply = False
        self._mp3.play(self._sd.path(name))
        self.state = PLAYING
        self._emit("playing")
        return {"accepted": True, "status": "playing"}

    def stop(self):
        """Stop now; True if something was playing or paused."""
        if self.state == IDLE:
            return False
        self._mp3.stop()
        self.state = IDLE
        self.repeat_left = 0
        self.power_off_after = False
        self._paused_by_reply = False
        self._emit("stopped")
        return True

    def pause_for_reply(self):
        """A TTS reply starts: pause, and keep only the current pass."""
        if self.state != PLAYING:
            return False
        self._mp3.pause()
        self.state = PAUSED
        self._paused_by_reply = True
        self.repeat_left = 1
        self.power_off_after = False
        self._emit("paused")
        return True

    def resume_after_reply(self):
        if self.state != PAUSED or not self._paused_by_reply:
            return False
        self._paused_by_reply = False
        self._mp3.resume()
        self.state = PLAYING
        self._emit("resumed")
        return True

    def status(self):
        return {"state": self.state, "name": self.name if self.state != IDLE else None,
                "repeat_left": self.repeat_left, "power_off_after": self.power_off_after}

    # ---- backend events ----

    def _on_natural_end(self):
        if self.state != PLAYING:
            return  # a late end after stop/pause is not a pass
        self.passes += 1
        self.repeat_left -= 1
        self._emit("pass_end")
        if self.repeat_left > 0:
            self._mp3.play(self._sd.path(self.name))
            self._emit("playing")
            return
        self.state = IDLE
        power_off = self.power_off_after
        self.power_off_after = False
        self._emit("done")
        if power_off and self._standby is not None:
            self._standby(proto.STANDBY_REPEAT_DONE)
