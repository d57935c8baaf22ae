"""Draining the sessions of one process: what a node does before it stops
(SIGTERM, `xiaozhi-server node drain`), in a worker or in a server of one
process, after it stopped accepting connections.

    left_busy = await drain_sessions(services.sessions, timeout_s=20)

A reply under way (the LLM's answer being spoken, a tool round) is let
finish, up to timeout_s in all; then every session is closed with a
`goodbye` (reason "server draining") and the WebSocket's normal close, so
the device goes idle at once and its next connect (a wake word, its own
retry) asks OTA, which sends it to another node. A lesson the board plays
goes on meanwhile: the board's player does not need the channel.
"""
import asyncio
import logging

log = logging.getLogger(__name__)

GOODBYE_REASON = "server draining"
CLOSE_WAIT_S = 5.0


def _replying(session):
    reply = session.floor.reply      # the reply being spoken (session/floor.py)
    return reply is not None and not reply.done


async def drain_sessions(sessions, timeout_s: float, poll_s: float = 0.05) -> int:
    """Let replies finish (bounded), then close every session; how many were
    still replying when the time ran out."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline and any(_replying(s) for s in list(sessions)):
        await asyncio.sleep(poll_s)
    cut = sum(1 for s in list(sessions) if _replying(s))
    if cut:
        log.warning("drain: %d replies still under way after %.0f s: cut", cut, timeout_s)
    closing = list(sessions)
    # A device that froze (or lost power: no FIN) has a full socket that
    # takes no goodbye: each close gets CLOSE_WAIT_S, never more.
    results = await asyncio.gather(*[asyncio.wait_for(s.close(GOODBYE_REASON), CLOSE_WAIT_S) for s in closing],
                                   return_exceptions=True)
    for s, r in zip(closing, results):
        if isinstance(r, Exception):
            log.info("drain: session of %s was already gone (%s)", getattr(s, "device_id", "?"), r)
    end = loop.time() + CLOSE_WAIT_S
    while sessions and loop.time() < end:
        await asyncio.sleep(poll_s)
    log.info("drain: %d sessions closed", len(closing))
    return cut
