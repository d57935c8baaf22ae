"""Nearest device answers: of a household's devices that heard the wake word
within one window, only one answers.

    arbiter = WakeArbiter(store, window_s=0.4)
    if not await arbiter.claim(device_id, level=-23.5, score=0.9):
        ...   # another device of the household answers: this one goes idle

The claims go through the control store (store_wake.py), so devices on
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

The window is measured on `clock` (wall time, so nodes on different
machines agree within NTP's error); tests hand in a clock and a sleep of
their own.
"""
import asyncio
import logging
import time

log = logging.getLogger(__name__)


def winner(claims):
    """The device that answers a round (claims: first first)."""
    if any(c["level"] is None for c in claims):
        return claims[0]["device_id"]
    best = max(claims, key=lambda c: (c["level"], c["score"] if c["score"] is not None else -1.0,
                                      -c["seq"]))
    return best["device_id"]


class WakeArbiter:
    def __init__(self, store, window_s=0.4, clock=time.time, sleep=asyncio.sleep):
        self.store = store
        self.window_s = float(window_s)
        self.clock = clock
        self.sleep = sleep

    async def claim(self, device_id, level=None, score=None):
        """True when this device answers its wake word, False when another
        device of its household does. A store that fails lets it answer (two
        devices answering beats none)."""
        try:
            return await self._claim(device_id, level, score)
        except Exception as e:
            log.warning("[%s] wake arbitration unavailable, answering: %s", device_id, e)
            return True

    async def _claim(self, device_id, level, score):
        home = await self.store.household_of(device_id)
        if home is None or home[1] < 2:
            return True
        household = home[0]
        now = self.clock()
        r = await self.store.claim_wake(household, device_id, level, score, now, self.window_s)
        claims = r["claims"]
        if claims[0]["device_id"] == device_id and level is None:
            return True       # first, and first-come: nothing later can take it
        if any(c["level"] is None for c in claims):
            return winner(claims) == device_id
        await self.sleep(max(0.0, r["round_at"] + self.window_s - self.clock()))
        won = winner(await self.store.wake_round(household, r["round_at"])) == device_id
        log.info("[%s] wake word in household %s: %s", device_id, household,
                 "answers" if won else "another device answers")
        return won


def window_s(config):
    return float(config["fleet"]["wake_window_ms"]) / 1000.0


async def open_arbiter(config):
    """An arbiter on a connection of its own to the node's control store (a
    worker process's: the primary keeps its own)."""
    from . import wiring
    from .store import Store
    store = await Store(wiring.db_target(config)).open()
    return WakeArbiter(store, window_s(config))
