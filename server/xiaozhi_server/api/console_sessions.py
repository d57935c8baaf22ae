"""The parents' console login: a random session id in an HttpOnly cookie.

The page never keeps the API token: the parent types it once, the server
checks it and answers with a cookie holding a fresh random id that maps,
here in memory, to that token. A session is checked against the tokens
the API accepts now, so changing control.api_token ends every session made
with the old one. Sessions end after IDLE_S without use, or at logout;
a server restart ends them all (the parent types the token again).

Memory is bounded: beyond MAX_SESSIONS the least recently used one goes.
"""
import hmac
import secrets
import time
from collections import OrderedDict

COOKIE = "xz_session"
IDLE_S = 12 * 3600.0
MAX_SESSIONS = 256


class ConsoleSessions:
    def __init__(self, idle_s=IDLE_S, max_sessions=MAX_SESSIONS, clock=time.monotonic):
        self.idle_s = idle_s
        self.max_sessions = max_sessions
        self._clock = clock
        self._by_id: OrderedDict[str, tuple[str, float]] = OrderedDict()   # id -> (token, last use)

    def open(self, token):
        """A new session id for a token the caller has checked."""
        sid = secrets.token_urlsafe(32)
        self._by_id[sid] = (token, self._clock())
        while len(self._by_id) > self.max_sessions:
            self._by_id.popitem(last=False)
        return sid

    def token(self, sid, accepted):
        """The token behind session `sid` if it is live and still one of
        `accepted`, else None. Using a session keeps it alive."""
        entry = self._by_id.get(sid or "")
        if entry is None:
            return None
        token, used = entry
        now = self._clock()
        if now - used > self.idle_s or not any(hmac.compare_digest(token, t) for t in accepted):
            del self._by_id[sid]
            return None
        self._by_id[sid] = (token, now)
        self._by_id.move_to_end(sid)
        return token

    def close(self, sid):
        self._by_id.pop(sid or "", None)
