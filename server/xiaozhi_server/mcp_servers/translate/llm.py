"""The language model the translator asks, from its own environment.

Environment (the server passes its own OPENAI_* through to this process):
OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL (default gpt-4o-mini), and
TRANSLATE_MODEL to use another model for translation only,
TRANSLATE_TIMEOUT_S (default 15). With none of OPENAI_BASE_URL,
OPENAI_API_KEY, OPENAI_MODEL set, the translator asks the node's offline
model when one serves (llm `local`: its llama.cpp host, found by its state
file, providers/llm/llama_host.py); otherwise no model is configured — the
same rule the chat side uses.

One non-streaming request per job, temperature 0.2, no tools: a
translation is short, and the caller speaks it only once it is whole.
"""
import asyncio
import os

# Imported with the process, not on the first call: importing openai takes
# about half a second, which the child's first translation should not wait.
import openai

DEFAULT_MODEL = "gpt-4o-mini"
TEMPERATURE = 0.2
MAX_TOKENS = 1024


def local_host():
    """(Chat Completions base URL, model, extra request fields) of this node's
    offline model host, or None when none serves. Blocking (a health check on
    loopback). The host keeps a slot for translations (`translation_slot`):
    sent anywhere else, one would push a child's conversation out of its slot."""
    from xiaozhi_server.providers.llm import llama_host, local_model
    state = llama_host.read_state(local_model.cache_root() / (local_model.DEFAULT_MODEL + ".gguf"))
    if state is None:
        return None
    extra = {"id_slot": state["translation_slot"]} if isinstance(state.get("translation_slot"), int) else {}
    return state["url"] + "/v1", state.get("model") or local_model.DEFAULT_MODEL, extra


class TranslateError(Exception):
    """A failure the caller should hear about in plain words."""


class TranslatorLlm:
    def __init__(self, environ=None):
        env = os.environ if environ is None else environ
        self.base_url = env.get("OPENAI_BASE_URL") or None
        self.api_key = env.get("OPENAI_API_KEY") or None
        self.model = env.get("TRANSLATE_MODEL") or env.get("OPENAI_MODEL") or DEFAULT_MODEL
        self.timeout = float(env.get("TRANSLATE_TIMEOUT_S") or 15)
        self.configured = bool(self.base_url or self.api_key or env.get("OPENAI_MODEL"))
        self._client = None

    def _get_client(self, base_url=None):
        if base_url is not None:        # the offline host: found anew each time (it may restart)
            return openai.AsyncOpenAI(base_url=base_url, api_key="none", timeout=self.timeout, max_retries=0)
        if self._client is None:
            # No retries: a dead endpoint should come back as an error the
            # device can speak, not as a long silence.
            self._client = openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key or "none",
                                       timeout=self.timeout, max_retries=0)
        return self._client

    async def complete(self, messages):
        """The model's reply text; raises TranslateError with a readable reason."""
        base_url, model, extra = None, self.model, None
        if not self.configured:
            local = await asyncio.to_thread(local_host)
            if local is None:
                raise TranslateError("no language model is configured for translation")
            base_url, model, extra = local
        try:
            response = await self._get_client(base_url).chat.completions.create(
                model=model, messages=messages, temperature=TEMPERATURE,
                max_tokens=MAX_TOKENS, stream=False, extra_body=extra or None)
        except openai.APITimeoutError:
            raise TranslateError("the language model did not answer within %g s" % self.timeout) from None
        except openai.APIStatusError as exc:
            raise TranslateError("the language model refused the translation (HTTP %d: %s)"
                                 % (exc.status_code, _error_message(exc))) from None
        except openai.APIError as exc:
            raise TranslateError("the language model could not be reached: %s" % exc) from None
        choices = response.choices or []
        text = choices[0].message.content if choices and choices[0].message else None
        if not text or not text.strip():
            raise TranslateError("the language model returned no translation")
        return text


def _error_message(exc):
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else body
    return (error or {}).get("message") or exc.message
