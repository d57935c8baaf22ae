"""Nearest device answers: of a household's devices that heard the wake word
within one window, only one answers.

    arbiter = WakeArbiter(store.wake, window_s=0.4)
    if not await arbiter.claim(device_id, level=-23.5, score=0.9):
        ...   # another device of the household answers: this one goes idle

The claims go through the control store (store/wake.py), so devices on
different nodes sharing the store are arbitrated alike; every claimant
reads its round's claims and decides by the same rule, with no leader:

- a device in no household, or alone in its own, answers at once;
- when every claim of the round carries a level, the loudest answers (a
  tie goes to the higher score, then to the first); the first claim of a
  round waits out the window for louder ones, a later one only until the
  window closes;
- a claim without a level (stock firmware sends none) cannot be compared:
  the round is first-come, decided at once (a stock device that heard the
  word first is never delayed).

What a device claims is not taken on trust (a device may lie, or spam):

- the schema refuses a level above 0 dBFS (a microphone's full scale),
  below -200, a score outside 0..1, and NaN or Infinity; the arbiter
  clamps again whatever reaches it another way;
- a level above SUSPECT_DBFS (-3 dBFS: clipping, or invented) is out of
  family: such a claim ranks below every believable one, and among
  themselves such claims are decided by score, then by who came first,
  never by the level they name;
- each device may claim WAKE_BURST wake words at once, then one every
  WAKE_EVERY_S seconds (per node); a claim beyond that does not answer
  (its sibling, if any heard the word, does) and is logged.

The window is measured on `clock` (wall time, so nodes on different
machines agree within NTP's error); tests hand in a clock and a sleep of
their own.
"""
import asyncio
import collections
import logging
import time

from ..logthrottle import LogThrottle
from ..tokenbucket import TokenBucket

log = logging.getLogger(__name__)


MIN_DBFS, MAX_DBFS = -200.0, 0.0
SUSPECT_DBFS = -3.0     # louder than this at the mic: clipping, or a level made up
WAKE_BURST = 3          # wake words a device may claim at once
WAKE_EVERY_S = 10.0     # then one more every WAKE_EVERY_S
MAX_DEVICES = 4096      # wake budgets kept (the oldest device is forgotten first)


def _finite(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x - x == 0


def clean(level, score):
    """(level, score) clamped to what a microphone and an engine can report;
    None for anything that is not a finite number."""
    level = min(MAX_DBFS, max(MIN_DBFS, float(level))) if _finite(level) else None
    score = min(1.0, max(0.0, float(score))) if _finite(score) else None
    return level, score


def _rank(c):
    believable = c["level"] <= SUSPECT_DBFS
    return (believable, c["level"] if believable else MIN_DBFS,
            c["score"] if c["score"] is not None else -1.0, -c["seq"])


def winner(claims):
    """The device that answers a round (claims: first first)."""
    if any(c["level"] is None for c in claims):
        return claims[0]["device_id"]
    return max(claims, key=_rank)["device_id"]


class WakeArbiter:
    def __init__(self, records, window_s=0.4, clock=time.time, sleep=asyncio.sleep):
        self.records = records      # store.wake: households and their wake claims
        self.window_s = float(window_s)
        self.clock = clock
        self.sleep = sleep
        self._budgets = collections.OrderedDict()     # device_id -> TokenBucket of wake claims
        self.refusals = LogThrottle(log)

    async def claim(self, device_id, level=None, score=None):
        """True when this device answers its wake word, False when another
        device of its household does. A store that fails lets it answer (two
        devices answering beats none)."""
        level, score = clean(level, score)
        try:
            return await self._claim(device_id, level, score)
        except Exception as e:
            log.warning("[%s] wake arbitration unavailable, answering: %s", device_id, e)
            return True

    async def _claim(self, device_id, level, score):
        home = await self.records.household_of(device_id)
        if home is None or home[1] < 2:
            return True
        household = home[0]
        now = self.clock()
        if not self._within_budget(device_id, now):
            self.refusals.log(logging.WARNING, ("wake budget", device_id),
                              "[%s] wake words faster than %d at once and one per %.0f s: this one does not "
                              "answer (household %s)", device_id, WAKE_BURST, WAKE_EVERY_S, household)
            return False
        r = await self.records.claim_wake(household, device_id, level, score, now, self.window_s)
        claims = r["claims"]
        if claims[0]["device_id"] == device_id and level is None:
            return True       # first, and first-come: nothing later can take it
        if any(c["level"] is None for c in claims):
            return winner(claims) == device_id
        await self.sleep(max(0.0, r["round_at"] + self.window_s - self.clock()))
        won = winner(await self.records.wake_round(household, r["round_at"])) == device_id
        log.info("[%s] wake word in household %s: %s", device_id, household,
                 "answers" if won else "another device answers")
        return won


    def _within_budget(self, device_id, now):
        bucket = self._budgets.pop(device_id, None) or TokenBucket(1.0 / WAKE_EVERY_S, WAKE_BURST, now)
        self._budgets[device_id] = bucket
        while len(self._budgets) > MAX_DEVICES:
            self._budgets.popitem(last=False)
        return bucket.take(now)


def window_s(config):
    return float(config["fleet"]["wake_window_ms"]) / 1000.0

