# ---- reconnect backoff: the same schedule on the board and the server ----
# Exponential backoff between automatic reconnect attempts: first, 2x, 4x
# ... up to a cap, with up to 1/4 of random jitter so many clients that
# lost the same peer do not come back in step. reset() after a success.
#
#   b = Backoff(first_ms=1000, max_ms=30000)
#   await sleep_ms(b.next_ms())      # before each new attempt
#   b.reset()                        # connected
import os


class Backoff:
    def __init__(self, first_ms=1000, max_ms=30000):
        self.first_ms = first_ms
        self.max_ms = max_ms
        self._next = first_ms

    def reset(self):
        self._next = self.first_ms

    def next_ms(self):
        base = self._next
        self._next = min(self.max_ms, self._next * 2)
        jitter = (os.urandom(1)[0] * base) // 1024  # 0 .. base/4
        return min(self.max_ms, base + jitter)
