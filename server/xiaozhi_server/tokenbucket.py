"""A token bucket: what one sender may do per second, with bursts.

Used by the WebSocket edge (transport/ratelimit.py, per connection) and the
control plane's MQTT link (broker/mqtt.py, per device and kind of report).
"""


class TokenBucket:
    """`rate` messages a second with bursts of `burst`. over_since: when the
    sender went over the limit, until the bucket is nearly full again (the
    sender stayed under the rate for burst/rate seconds)."""

    __slots__ = ("rate", "burst", "tokens", "stamp", "over_since")

    def __init__(self, rate, burst, now):
        self.rate = float(rate)
        self.burst = float(burst)
        self.tokens = float(burst)
        self.stamp = now
        self.over_since = None

    def take(self, now):
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            if self.tokens >= self.burst - 1.0:
                self.over_since = None
            self.tokens -= 1.0
            return True
        if self.over_since is None:
            self.over_since = now
        return False
