"""The LLM used when no model is configured: it says so, in the child's language.

Config keys: `language` (en or zh; default: the script of the last user
message). `choose_llm()` picks this provider when neither the config nor
the environment names a model endpoint.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ...text.lang import language_of
from ...text.lines import Lines
from .events import Done, TextDelta
from ..registry import create, register

if TYPE_CHECKING:
    from ..base import LlmProvider

def _last_user_text(messages):
    for m in reversed(messages or []):
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            return m["content"]
    return ""


@register("llm", "none")
class NoLlm:
    # The config keys read here (registry.options; config.py refuses others at start).
    OPTIONS = ("language", "lines")
    configured = False

    def __init__(self, config):
        self.language = config.get("language")
        # The line it says: the lines file's `no_llm` (services hands in the operator's).
        self.lines = config.get("lines") or Lines.load().table["no_llm"]

    def line(self, messages=None, language=None):
        lang = language or self.language or language_of(_last_user_text(messages))
        return self.lines.get(lang) or self.lines["en"]

    async def stream_chat(self, messages, tools=None, language=None, **_ignored):
        yield TextDelta(self.line(messages, language))
        yield Done("stop")


def local_model_ready() -> bool:
    """Set-up (`make run`) prepared the offline model and saw it run here
    (llm/local_model.py). XIAOZHI_LOCAL_LLM=off keeps it from being the
    default (the test suite sets it: its tests script their model)."""
    if os.environ.get("XIAOZHI_LOCAL_LLM", "").lower() in ("0", "off", "no", "false"):
        return False
    from .local_model import installed
    return installed()


def choose_llm(config: dict | None = None, lines: dict | None = None, prompt: str | None = None) -> LlmProvider:
    """The configured LLM provider: `config["type"]` if given, else openai when
    OPENAI_BASE_URL, OPENAI_MODEL or OPENAI_API_KEY is set, else `local` when
    set-up prepared the offline model, else `none` (which says `lines`, the
    no-model line per language). `prompt`: the agent prompt, which the local
    model reads ahead of the first child."""
    config = dict(config or {})
    if not config.get("type"):
        if config.get("base_url") or config.get("model") or any(
                os.environ.get(k) for k in ("OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY")):
            config["type"] = "openai"
        elif local_model_ready():
            config["type"] = "local"
        else:
            config["type"] = "none"
    if config["type"] == "none" and lines is not None:
        config.setdefault("lines", lines)
    if config["type"] == "local" and prompt:
        config.setdefault("system_prompt", prompt)
    return create("llm", config)
