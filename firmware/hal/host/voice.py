# Host wake word and offline command words: injected events.
#
# On the board these come from the speech engine; here a test or the
# simulator console injects them. While disabled (standby), injected events
# are dropped, as a sleeping board hears nothing.
import asyncio


class HostVoice:
    available = True

    def __init__(self):
        self.enabled = True
        self._events = []
        self._flag = asyncio.Event()
        self.dropped = 0

    def enable(self, on):
        self.enabled = bool(on)

    def inject_wake(self, word="你好小智"):
        self._push(("wake", word))

    def inject_phrase(self, text):
        self._push(("phrase", text))

    def _push(self, ev):
        if not self.enabled:
            self.dropped += 1
            return
        self._events.append(ev)
        self._flag.set()

    def poll(self):
        """The next event or None, without waiting."""
        return self._events.pop(0) if self._events else None

    async def next_event(self):
        """Wait for ("wake", word) or ("phrase", text)."""
        while not self._events:
            self._flag = asyncio.Event()
            await self._flag.wait()
        return self._events.pop(0)
