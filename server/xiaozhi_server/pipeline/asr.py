"""The pipeline's ASR stage: the one place that calls the ASR provider.

The listener hands it each utterance it ends (speculatively or for good)
and gets the words back, or None when the provider failed (logged here;
listening goes on). A streaming provider plugs in here: it can be fed
the utterance's audio as the listener hears it and asked for the words
at the end, without the listener or the session changing.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..providers.base import AsrProvider

log = logging.getLogger(__name__)


class Transcriber:
    def __init__(self, provider: AsrProvider, language: str | None = None) -> None:
        self.provider = provider
        self.language = language      # the config's asr.language; None = the provider guesses

    async def words(self, pcm16k: bytes) -> str | None:
        """The words of one utterance (16 kHz mono int16), stripped; None if ASR failed."""
        try:
            text = await self.provider.transcribe(pcm16k, language=self.language)
        except Exception:
            log.exception("ASR failed")
            return None
        return text.strip()
