"""OpenAI-compatible transcription (`POST {base_url}/audio/transcriptions`):
OpenAI, Groq, and self-hosted faster-whisper servers (speaches,
faster-whisper-server, LocalAI, vLLM) speak it.

The utterance is sent as one multipart WAV upload when it ends: a batch
recognizer behind the stream interface (asr.base.open_stream), so nothing
is sent while the child speaks.

Config keys: `base_url` (default https://api.openai.com/v1), `api_key`
(else the variable `api_key_env` names, default XIAOZHI_ASR_API_KEY; with
no base_url, OPENAI_API_KEY too: a key for OpenAI is never sent to another
host), `model` (default whisper-1; Groq: whisper-large-v3-turbo),
`language` (default: the session's), `prompt` (words to expect: names,
"小智"), `response_format` (json, the default; text or verbose_json),
`temperature`, `connect_timeout` (s, default 3), `timeout` (s for the
answer once connected, default 15). The key goes in the Authorization header only; it
is never logged and never part of an error message.
"""
import asyncio
import io
import json
import logging
import os
import wave

from .base import BYTES_PER_SECOND, SAMPLE_RATE, AsrError
from ..registry import register

log = logging.getLogger(__name__)

OPENAI_URL = "https://api.openai.com/v1"
FORMATS = ("json", "text", "verbose_json")
MIN_BYTES = BYTES_PER_SECOND // 10   # under 0.1 s: nothing a person said


def pcm_to_wav(pcm16k: bytes) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(pcm16k)
    return out.getvalue()


def api_key_from(config: dict, default_env: str, default_url: bool) -> str | None:
    """The key from the config, else its variable; OPENAI_API_KEY only for OpenAI itself."""
    if config.get("api_key"):
        return str(config["api_key"])
    key = os.environ.get(config.get("api_key_env") or default_env)
    if not key and default_url:
        key = os.environ.get("OPENAI_API_KEY")
    return key or None


@register("asr", "openai")
class OpenAiAsr:
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("base_url", "api_key", "api_key_env", "model", "language", "response_format",
               "connect_timeout", "timeout", "prompt", "temperature")

    def __init__(self, config):
        self.config = config
        self.name = config.get("name") or "openai"
        self.base_url = (config.get("base_url") or OPENAI_URL).rstrip("/")
        self._api_key = api_key_from(config, "XIAOZHI_ASR_API_KEY", not config.get("base_url"))
        self.model = config.get("model", "whisper-1")
        self.language = config.get("language")
        self.format = config.get("response_format", "json")
        if self.format not in FORMATS:
            raise ValueError("openai ASR response_format must be one of %s, not %r"
                             % (", ".join(FORMATS), self.format))
        self.connect_timeout = float(config.get("connect_timeout", 3))
        self.timeout = float(config.get("timeout", 15))
        self._client = None

    def __repr__(self):
        return "OpenAiAsr(%s, model=%s)" % (self.base_url, self.model)   # never the key

    def client(self):
        if self._client is None:
            import openai
            # No retries: a dead service should reach the fallback now, not
            # after the client's back-off while the child waits.
            self._client = openai.AsyncOpenAI(
                base_url=self.base_url, api_key=self._api_key or "none", max_retries=0,
                timeout=openai.Timeout(self.timeout, connect=self.connect_timeout))
        return self._client

    async def warm_up(self):
        """Import the client now, in the pool (see llm.openai.warm_up)."""
        from ...pools import run_blocking
        await run_blocking(self.client)

    def _args(self, pcm16k, language):
        args = {"file": ("utterance.wav", pcm_to_wav(pcm16k), "audio/wav"), "model": self.model,
                "response_format": self.format}
        language = language or self.language
        if language:
            args["language"] = language
        for key in ("prompt", "temperature"):
            if self.config.get(key) is not None:
                args[key] = self.config[key]
        return args

    async def transcribe(self, pcm16k, language=None):
        """Text of 16 kHz mono int16 PCM; raises AsrError when the service fails."""
        if len(pcm16k) < MIN_BYTES:
            return ""
        import openai
        try:
            # The client's timeout is per read: a server trickling its answer
            # would outlast it, so the whole request has a deadline too.
            raw = await asyncio.wait_for(
                self.client().audio.transcriptions.with_raw_response.create(**self._args(pcm16k, language)),
                self.connect_timeout + self.timeout)
            body = raw.http_response.content
        except (openai.APITimeoutError, asyncio.TimeoutError):
            raise self._error("timeout", "no answer from %s within %.1f s" % (self.base_url, self.timeout))
        except openai.APIStatusError as exc:
            reason = "auth" if exc.status_code in (401, 403) else "refused"
            raise self._error(reason, "HTTP %d from %s: %s" % (exc.status_code, self.base_url,
                                                               _error_message(exc)), exc.status_code)
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            reason = "closed" if _was_cut(cause) else "connection"
            raise self._error(reason, "%s: %s" % (self.base_url, cause or type(cause).__name__))
        return self._text(body)

    def _error(self, reason, detail, status=None):
        err = AsrError(self.name, reason, detail, status)
        log.debug("%s", err)   # the caller logs it once (pipeline/asr.py, the fallback chain)
        return err

    def _text(self, body):
        if self.format == "text":
            try:
                return body.decode("utf-8").strip()
            except UnicodeDecodeError:
                raise self._error("bad_response", "the text answer is not UTF-8")
        try:
            data = json.loads(body)
        except ValueError:
            raise self._error("bad_response", "not JSON: %r" % body[:80])
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise self._error("bad_response", "no text in the answer: %r" % body[:80])
        return data["text"].strip()


def _error_message(exc):
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:200]
        if isinstance(body.get("detail"), str):   # FastAPI-based servers
            return body["detail"][:200]
    return str(exc.message)[:200]


def _was_cut(exc):
    """True when the server went away in the middle of its answer (not before it)."""
    name = type(exc).__name__
    return name in ("RemoteProtocolError", "ReadError") or "incomplete" in str(exc).lower()
