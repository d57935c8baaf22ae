# The board's wake word and offline command words: xzaudio's speech engine
# (esp-sr's AFE with WakeNet, and MultiNet, in tasks of their own on the
# codec task's audio) behind the API the app uses, the same as
# hal.host.voice.HostVoice:
#
#   v = Voice()                        # nothing runs yet
#   v.available                        # True once the engine and its models run
#   kind, word = await v.next_event()  # ("wake", "你好小智") / ("phrase", "切换模式")
#   v.last                             # (kind, word, score, level_db) of that event
#   v.enable(False)                    # standby: nothing is heard
#   v.pause(True)                      # detection off while a lesson needs the CPU
#
# The engine hears the audio engine's mic, so it starts once the board's
# audio profile has started that engine (xzaudio.start); until then
# next_event() looks again every START_RETRY_MS. The command words are
# every phrase of the command table (assets/commands.json, its pinyin for
# MultiNet); which of them means something in the current step is the
# entry room's business (app/entry/commands.py), as on the host.
# Only events cost heap: the engine's audio never reaches Python.
import errno
import json

import asyncio
import log

try:
    import xzaudio as _c
    from asyncio import core as _core
except ImportError:  # a build without the C module: no engine
    _c = None

try:
    from micropython import const
except ImportError:  # CPython (compile checks only)
    def const(x):
        return x

START_RETRY_MS = const(500)
LANG = "cn"  # MultiNet's language; the command table's pinyin is Chinese
TABLES = ("/assets/commands.json", "assets/commands.json", "firmware/assets/commands.json")
_KINDS = {1: "wake", 2: "phrase"}  # xzaudio.WAKE, xzaudio.PHRASE

_log = log.get("voice")


def command_words(table):
    """((id, pinyin, phrase), ...): each phrase of every step once, in
    table order, numbered from 1 (MultiNet's ids start at 1)."""
    out, seen = [], {}
    for step in table.get("steps", {}).values():
        for entry in step:
            phrase = entry.get("phrase")
            if phrase and phrase not in seen and entry.get("pinyin"):
                seen[phrase] = len(out) + 1
                out.append((len(out) + 1, entry["pinyin"], phrase))
    return tuple(out)


def _load_table(paths):
    for p in paths:
        try:
            with open(p) as f:
                return json.load(f)
        except (OSError, ValueError):
            continue
    return None


class Voice:
    def __init__(self, tables=TABLES, lang=LANG):
        self.enabled = True
        self.aec = False          # echo cancellation: hears while the device speaks
        self.last = None
        self._tables = tables
        self._lang = lang
        self._sp = None
        self._failed = _c is None or not hasattr(_c, "Speech")
        self._paused = False
        self._never = asyncio.Event()
        if self._failed:
            _log.warn("no speech engine in this firmware: wake word and command words are off")

    @property
    def available(self):
        return self.start()

    def start(self):
        """Starts the engine once the audio engine runs; True while it runs."""
        if self._sp is not None or self._failed:
            return self._sp is not None
        if not _c.running():
            return False          # the board has not started its audio profile yet
        sp = _c.Speech()
        try:
            sp.start(self._lang)
        except OSError as e:
            if e.errno == errno.EAGAIN:
                return False
            self._failed = True
            _log.error("speech engine off: %s", "no models in the model partition"
                       if e.errno == errno.ENOENT else "out of memory (%d)" % e.errno)
            return False
        self._sp = sp
        self.aec = sp.aec()
        self._set_commands()
        self._apply_pause()
        wake_model, cmd_model = sp.models()
        _log.info("speech engine: wake word %s, command words %s, echo cancellation %s",
                  wake_model, cmd_model or "off", "on" if self.aec else "off (not heard while speaking)")
        return True

    def _set_commands(self):
        table = _load_table(self._tables)
        if table is None:
            _log.warn("no command table: only the wake word is heard")
            return
        words = command_words(table)
        refused = self._sp.set_commands(words)
        for cid in refused:
            _log.warn("command word '%s' (%s) refused by the model", words[cid - 1][2], words[cid - 1][1])

    def enable(self, on):
        self.enabled = bool(on)
        self._apply_pause()

    def pause(self, on):
        """Detection off (on=True) and back; for the player when the CPU is short."""
        self._paused = bool(on)
        self._apply_pause()

    def _apply_pause(self):
        if self._sp is not None:
            self._sp.pause(self._paused or not self.enabled)

    def poll(self):
        """The next event or None, without waiting."""
        while self._sp is not None:
            ev = self._sp.event()
            if ev is None:
                return None
            if self.enabled:       # queued before a standby began: not heard
                self.last = (_KINDS[ev[0]], ev[1], ev[2], ev[3])
                _log.info("%s '%s' score %s level %d dB", self.last[0], ev[1],
                          "-" if ev[2] is None else "%.2f" % ev[2], int(ev[3]))
                return self.last[0], ev[1]
        return None

    async def next_event(self):
        """Wait for ("wake", word) or ("phrase", word)."""
        while True:
            if not self.start():
                if self._failed:
                    await self._never.wait()
                await asyncio.sleep_ms(START_RETRY_MS)
                continue
            ev = self.poll()
            if ev is not None:
                return ev
            await self._readable()

    async def _readable(self):
        # The asyncio poller wakes this task when the engine queues an
        # event (the object polls readable), as audio.py's streams wait. A
        # coroutine is a generator in MicroPython, so its bare yield reaches
        # the scheduler; apart from next_event, which returns a value, so
        # the file stays valid CPython too (the board's tests import it).
        yield _core._io_queue.queue_read(self._sp)
