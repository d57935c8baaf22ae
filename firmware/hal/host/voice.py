# Host wake word and offline command words: injected events.
#
# On the board these come from the speech engine; here a test or the
# simulator console injects them, a wake word with the level (dBFS) and
# score the board's engine would measure, read back from `last` as on the
# board (hal/esp32/voice.py). While disabled (standby), injected events
# are dropped, as a sleeping board hears nothing.
import asyncio


class HostVoice:
    available = True

    def __init__(self):
        self.enabled = True
        self._events = []
        self._flag = asyncio.Event()
        self.dropped = 0
        self.last = None     # (kind, word, score, level_db) of the last event returned

    def enable(self, on):
        self.enabled = bool(on)

    def inject_wake(self, word="你好小智", level_db=None, score=None):
        self._push(("wake", word, score, level_db))

    def inject_phrase(self, text):
        self._push(("phrase", text, None, None))

    def _push(self, ev):
        if not self.enabled:
            self.dropped += 1
            return
        self._events.append(ev)
        self._flag.set()

    def poll(self):
        """The next event or None, without waiting."""
        if not self._events:
            return None
        self.last = self._events.pop(0)
        return self.last[0], self.last[1]

    async def next_event(self):
        """Wait for ("wake", word) or ("phrase", text)."""
        while not self._events:
            self._flag = asyncio.Event()
            await self._flag.wait()
        return self.poll()
