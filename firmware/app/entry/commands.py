# Offline command words: a table (assets/commands.json) of phrase, pinyin
# and action per interaction step.
#
#   cmds = Commands(table, clock)
#   cmds.phrases()           # the current step's phrases (what the detector listens for)
#   r = cmds.match("切换模式")   # see below
#
# match() answers one of
#   ("menu", step)                   the phrase opens another step (a menu)
#   ("task", app_id, task_id, params) start this task (source voice)
#   ("reserved", app_id, task_id)    a slot kept for a later app: "not available yet"
#   ("unknown", None)                not a phrase of the current step
# A menu lasts menu_timeout_ms on the board clock (counted again from the
# end of the device's question: restart_timer), then the device is back in
# the "main" step; any phrase matched inside a menu also ends it. On the
# board the detector (ESP-SR MultiNet, behind the HAL) is loaded with the
# phrases of the current step; on the host phrases are injected.
#
# Params may name "$sd_first": the first MP3 on the SD card by name (the
# table cannot know what the card holds). No action is special-cased by app.
import json

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

MAIN = "main"
DEFAULT_MENU_MS = const(10000)


def load(path):
    with open(path) as f:
        return json.loads(f.read())


def normalize(text):
    # Detectors and consoles differ in punctuation and spaces around a phrase.
    out = []
    for ch in text:
        if ch not in " \t\r\n,.!?，。！？、":
            out.append(ch)
    return "".join(out)


class Commands:
    def __init__(self, table, clock, sd_files=None):
        self._steps = table["steps"]
        if MAIN not in self._steps:
            raise ValueError("command table has no %r step" % MAIN)
        self._clock = clock
        self._sd_files = sd_files          # fn() -> list of MP3 names
        self.menu_ms = table.get("menu_timeout_ms", DEFAULT_MENU_MS)
        self.step = MAIN
        self._since = 0

    def current_step(self):
        if self.step != MAIN and self._clock.ticks_diff(self._clock.ticks_ms(), self._since) > self.menu_ms:
            self.step = MAIN
        return self.step

    def phrases(self):
        return [e["phrase"] for e in self._steps[self.current_step()]]

    def reset(self):
        self.step = MAIN

    def restart_timer(self):
        """The menu's time starts again (after the device asked its question)."""
        self._since = self._clock.ticks_ms()

    def choices(self, step):
        """The phrases a step offers, one per action, in table order (what
        the device says when the menu opens); reserved slots are not offered."""
        out, seen = [], []
        for e in self._steps.get(step, ()):
            a = e["action"]
            if a.get("reserved") or "menu" in a:
                continue
            k = (a["app_id"], a["task_id"])
            if k not in seen:
                seen.append(k)
                out.append(e["phrase"])
        return out

    def match(self, text):
        want = normalize(text)
        for e in self._steps[self.current_step()]:
            if normalize(e["phrase"]) != want:
                continue
            a = e["action"]
            if "menu" in a:
                if a["menu"] not in self._steps:
                    return ("unknown", None)
                self.step = a["menu"]
                self._since = self._clock.ticks_ms()
                return ("menu", a["menu"])
            self.step = MAIN
            if a.get("reserved"):
                return ("reserved", a["app_id"], a["task_id"])
            return ("task", a["app_id"], a["task_id"], self._params(a.get("params") or {}))
        return ("unknown", None)

    def _params(self, params):
        out = {}
        for k in params:
            v = params[k]
            if v == "$sd_first":
                names = sorted(self._sd_files()) if self._sd_files else []
                if not names:
                    continue   # the server's schema check will say what is missing
                v = names[0]
            out[k] = v
        return out
