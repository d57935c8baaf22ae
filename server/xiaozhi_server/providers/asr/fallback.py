"""A chain of ASR providers: when one cannot give the words, the next one
hears the same audio.

Config: `{"type": "fallback", "providers": [{"type": "funasr", ...},
{"type": "whisper"}], "retry_after_s": 30}`. The first member gets the
audio as the child speaks (its partial text is the chain's); the chain
also keeps the utterance, so a member that fails at the end (AsrError:
down, slow, cut, refused, garbage; or any crash) hands the whole utterance
to the next one. A member that could not be reached, timed out or refused
our credentials is skipped for `retry_after_s` seconds, so a dead service
costs one utterance its timeout, not every utterance. When every member
fails the chain raises an AsrError naming each failure: the pipeline's
"I could not hear that" line. A member that cannot be built here
(missing extra or model) is skipped and listed in `unavailable`.
"""
import logging
import time

from .base import AsrError, AsrStream, StreamingAsr, open_stream
from ..registry import ProviderError, create, register

log = logging.getLogger(__name__)

# Failures that say the service is away, not that this one utterance was hard.
RESTING_REASONS = ("connection", "timeout", "auth")


@register("asr", "fallback")
class FallbackAsr(StreamingAsr):
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("retry_after_s", "providers")

    def __init__(self, config):
        self.config = config
        self.name = config.get("name") or "fallback"
        self.retry_after_s = float(config.get("retry_after_s", 30))
        self.members = []
        self.unavailable = []
        for sub in config.get("providers") or []:
            if not isinstance(sub, dict):
                self.members.append(sub)   # a provider built by the caller
                continue
            try:
                self.members.append(create("asr", sub))
            except ProviderError as exc:
                log.warning("ASR provider %s skipped: %s", sub.get("type"), exc)
                self.unavailable.append("%s: %s" % (sub.get("type"), exc))
        if not self.members:
            raise ProviderError("asr fallback needs at least one provider that can run here (%s)"
                                % ("; ".join(self.unavailable) or "none configured"))
        self._resting_until = {}   # id(member) -> monotonic time it may be tried again

    def order(self):
        """Members to try, the ones resting after a failure last."""
        now = time.monotonic()
        awake = [m for m in self.members if self._resting_until.get(id(m), 0) <= now]
        return awake + [m for m in self.members if m not in awake]

    def failed(self, member, err):
        if isinstance(err, AsrError) and err.reason in RESTING_REASONS:
            self._resting_until[id(member)] = time.monotonic() + self.retry_after_s
        else:
            self._resting_until.pop(id(member), None)

    def succeeded(self, member):
        self._resting_until.pop(id(member), None)

    def open_stream(self, language=None, on_partial=None):
        return FallbackStream(self, language, on_partial)


def _name(member):
    return getattr(member, "name", None) or getattr(member, "type_name", type(member).__name__)


class FallbackStream(AsrStream):
    def __init__(self, chain, language, on_partial):
        super().__init__(on_partial)
        self.chain = chain
        self.language = language
        self._audio = bytearray()
        self._order = chain.order()
        self._first = open_stream(self._order[0], language, self._set_partial)

    @property
    def streamed(self):
        # A later member hears the audio whole: it streamed nothing.
        words = self._first.streamed
        return self.script(words) if self.script is not None and words else words

    async def push(self, pcm16k):
        self._audio += pcm16k
        await self._first.push(pcm16k)

    async def finish(self):
        errors = []
        last = None
        for i, member in enumerate(self._order):
            stream = self._first
            if i > 0:
                stream = open_stream(member, self.language)
                await stream.push(bytes(self._audio))
            try:
                text = await stream.finish()
            except AsrError as err:
                last = err
            except Exception as err:   # a crashed engine: the next one may still hear it
                log.exception("ASR %s crashed", _name(member))
                last = err
            else:
                self.chain.succeeded(member)
                if i > 0:
                    log.info("ASR %s heard the utterance after %s", _name(member), "; ".join(errors))
                return text
            finally:
                await stream.cancel()
            self.chain.failed(member, last)
            errors.append("%s: %s" % (_name(member), last))
            if i + 1 < len(self._order):
                log.warning("ASR %s failed (%s); trying %s", _name(member), last, _name(self._order[i + 1]))
        reason = last.reason if isinstance(last, AsrError) else "bad_response"
        raise AsrError(self.chain.name, reason, "every provider failed: " + "; ".join(errors))

    async def cancel(self):
        self._audio = bytearray()
        await self._first.cancel()
