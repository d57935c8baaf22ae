"""One turn of the conversation as values: what the child said (Turn) and
the handle on what the server says back (Reply).

A Turn is made where the words come from (listener.py for speech, the
session for typed text and an opener's cue) and is handed on whole:
listener -> chain -> runtime -> mode -> dialogue -> speaker. A fact about
the turn (when speech ended, whether it is final) is a field here, so a
new one is added in one place, not as one more argument through each stage.

A Reply is started by the session's floor (session/floor.py) for a turn or
on the server's own account (an opener, a lesson's line). It may be
prepared before its turn is final: everything is computed at once, and
the gate (the turn's `commit`) holds its audio until the words are final;
if the gate turns False the reply is dropped unheard (docs/server.md, One
turn).
"""
from __future__ import annotations

import asyncio
from typing import Any

from ..text.lang import language_of


class Turn:
    """The child's words, once heard (or typed)."""

    __slots__ = ("text", "audio_ms", "ended_at", "asr_ms", "commit", "failed", "language", "early")

    def __init__(self, text: str, audio_ms: float = 0.0, ended_at: float | None = None, asr_ms: float = 0.0,
                 commit: asyncio.Future | None = None, failed: str | None = None,
                 language: str | None = None, early: bool = False) -> None:
        # The words; the word stages (chain.py) may rewrite them. "" when ASR failed.
        self.text = text
        # True: words of a streaming pass, answered before the final text
        # (early_reply.py); `text` becomes the final text once it agrees.
        self.early = early
        self.failed = failed       # None, or why ASR gave no words (AsrFailed.reason)
        self.audio_ms = audio_ms   # speech as the VAD heard it (0 for typed words)
        self.ended_at = ended_at   # time.monotonic() when the end of speech was decided (None: typed)
        self.asr_ms = asr_ms
        # None (final: push to talk, typed) or a future: True = heard to the
        # end, False = the child went on and these words join the next turn.
        self.commit = commit
        # The language the child spoke, as the ASR result says it: its script
        # (Han: zh, Latin letters: en; the recognizers give no more); None
        # when the words hold no letter. The reply's voice follows it where
        # a sentence's own script says nothing (pipeline/speaker.py).
        if language is None and any(c.isalpha() for c in text):
            language = language_of(text)
        self.language = language

    @property
    def withdrawn(self) -> bool:
        """The child went on: these words are part of the next turn."""
        c = self.commit
        return c is not None and c.done() and not c.cancelled() and c.result() is False

    def __repr__(self) -> str:
        return "Turn(%r, %.0f ms)" % (self.text, self.audio_ms)


async def committed(turn: Turn | None) -> bool:
    """True once the turn is final (at once for push to talk, typed words and
    no turn at all); False if the child went on."""
    if turn is None or turn.commit is None:
        return True
    return await asyncio.shield(turn.commit)


class Reply:
    """What the server says for one turn (or on its own): the epoch it was
    started in, the turn it answers, what it said, when its first frame left.

    `said` gets each sentence as it goes to TTS (after the chain's stages),
    so what is kept in the transcripts is what the child heard."""

    __slots__ = ("epoch", "turn", "said", "first_audio_at", "task", "cancelled")

    def __init__(self, epoch: int, turn: Turn | None = None) -> None:
        self.epoch = epoch
        self.turn = turn
        self.said: list[str] = []
        self.first_audio_at: float | None = None    # monotonic; None until a frame left
        self.task: asyncio.Task | None = None       # the work speaking it (set by the floor)
        self.cancelled = False                      # cut off: barge-in, abort, a newer reply

    @property
    def gate(self) -> asyncio.Future | None:
        """Nothing is heard of the reply until this is True (None: at once)."""
        return self.turn.commit if self.turn is not None else None

    @property
    def done(self) -> bool:
        return self.task is None or self.task.done()

    def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.cancelled = True
            self.task.cancel()

    async def heard(self) -> bool:
        """Wait for the reply's end: True when it ran to its end (not cut off)."""
        t = self.task
        if t is None:
            return False
        await asyncio.wait({t})
        return not t.cancelled() and t.exception() is None

    def __repr__(self) -> str:
        return "Reply(epoch %d, %r)" % (self.epoch, self.turn)


async def one(text: str) -> Any:
    """One line as a reply's sentences."""
    yield text
