"""Wrong API tokens, counted per address: guessing is slowed to a crawl.

Each address may get `burst` tokens wrong at once, then one more every
`per_s` seconds; beyond that every attempt from it (right or wrong) is
answered 429 with Retry-After until its allowance comes back, so a
guesser learns nothing more. A right token costs nothing. The table is
bounded (the oldest address is forgotten first): an attacker with many
addresses gets `burst` tries per address, never unbounded memory.
"""
import collections
import time

from ..tokenbucket import TokenBucket
from ..errors import ControlError

BURST = 10          # wrong tokens an address may send at once (a parent mistyping)
PER_S = 6.0         # then one more every PER_S seconds (10 a minute)
MAX_ADDRESSES = 4096


class TooManyAttempts(ControlError):
    status = 429
    code = "too_many_attempts"

    def __init__(self, message, retry_after_s):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class LoginThrottle:
    def __init__(self, burst=BURST, per_s=PER_S, max_addresses=MAX_ADDRESSES, clock=time.monotonic):
        self.burst = burst
        self.rate = 1.0 / per_s
        self.max_addresses = max_addresses
        self.clock = clock
        self._buckets = collections.OrderedDict()

    def check(self, address):
        """TooManyAttempts while `address` has used its wrong guesses."""
        bucket = self._buckets.get(address)
        if bucket is None:
            return
        now = self.clock()
        bucket.tokens = min(bucket.burst, bucket.tokens + (now - bucket.stamp) * bucket.rate)
        bucket.stamp = now
        if bucket.tokens < 1.0:
            wait = (1.0 - bucket.tokens) / bucket.rate
            raise TooManyAttempts("too many wrong tokens from %s: try again in %d s" % (address, max(1, round(wait))),
                                  wait)

    def failed(self, address):
        """Count one wrong token from `address`."""
        now = self.clock()
        bucket = self._buckets.pop(address, None) or TokenBucket(self.rate, self.burst, now)
        self._buckets[address] = bucket
        bucket.take(now)
        while len(self._buckets) > self.max_addresses:
            self._buckets.popitem(last=False)
