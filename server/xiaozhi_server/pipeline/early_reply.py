"""A reply started on a streaming recogniser's words, before its final text.

At the turn's speculative end (listener.py) a streaming recogniser has
heard the whole utterance once: its streaming pass flushes the last
words at once, its correcting pass (a 2pass server's offline result)
follows later, 80-300 ms on a real one. The reply waits for that final
text, and with a model whose first sentence takes longer than the commit
silence, the child waits for the model. So once the streaming words have
stopped changing for `SETTLE_MS` after the end, and they do not go on
("and", a comma: turn_words.prepare_reply), the reply is started on them
as an utterance of its own whose commit future is this module's:

- True only when the turn commits (the child stayed quiet) AND the final
  text says the same words (turn_words.same_words: punctuation, spaces and
  case aside): the reply prepared on the streaming words is the one heard,
  and the final text is not answered a second time;
- False when the final text says other words (the final is answered as
  usual), when ASR fails, or when the child goes on: the reply was held
  and is dropped unheard, like any reply to words the child went on from.

Everything a reply does that leaves a trace waits for that commit:
its audio and subtitles (speaker.py), tool calls, which have effects on
the device, the app or the memory (dialogue.py), the kept conversation,
the transcript and the care records. A False commit is counted as a
wasted early start (an LLM request thrown away).
"""
from __future__ import annotations

import asyncio

from .turn_words import CommitSilence, same_words

SETTLE_MS = 20    # the streaming words unchanged this long after the end: its pass has flushed


class EarlyReply:
    """The early reply of one tentative utterance (listener._Tentative)."""

    __slots__ = ("text", "commit", "timer", "started", "utterance")

    def __init__(self) -> None:
        self.text = ""              # the streaming words the reply was started on
        self.commit: asyncio.Future | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.started = False
        self.utterance = None       # the listener's Turn for the early reply

    def wait_for_quiet(self, fn) -> None:
        """(Re)start the settle clock: fn() once the words stop changing."""
        if self.started:
            return
        if self.timer is not None:
            self.timer.cancel()
        self.timer = asyncio.get_running_loop().call_later(SETTLE_MS / 1000.0, fn)

    def start(self, text: str) -> asyncio.Future | None:
        """The commit future of a reply started on `text`, or None when the
        words are not worth a reply yet (nothing, or they go on)."""
        self.timer = None
        if self.started or not text or not CommitSilence.prepare_reply(text):
            return None
        self.started = True
        self.text = text
        self.commit = asyncio.get_running_loop().create_future()
        return self.commit

    def final(self, text: str | None, turn_commit: asyncio.Future) -> bool:
        """The final text came (None: ASR failed). True when the early reply
        stands for it: its commit then follows the turn's."""
        self.cancel_timer()
        if self.commit is None or self.commit.done():
            return False
        if text is None or not same_words(self.text, text):
            self.commit.set_result(False)
            return False
        if self.utterance is not None:
            self.utterance.text = text      # what the screen shows: the final's punctuation
        if turn_commit.done():
            self.commit.set_result(turn_commit.result())
        else:
            turn_commit.add_done_callback(self._follow)
        return True

    def _follow(self, turn_commit: asyncio.Future) -> None:
        if self.commit is not None and not self.commit.done():
            self.commit.set_result(not turn_commit.cancelled() and turn_commit.result())

    def drop(self) -> None:
        """The child went on (or listening ended): never heard."""
        self.cancel_timer()
        if self.commit is not None and not self.commit.done():
            self.commit.set_result(False)

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    @property
    def wasted(self) -> bool:
        return self.commit is not None and self.commit.done() and self.commit.result() is False
