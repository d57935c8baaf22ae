"""Pluggable ASR, TTS, LLM and VAD providers, chosen by `type` in the config.

    from xiaozhi_server.providers import create
    tts = create("tts", {"type": "piper"})
"""
from .registry import ProviderError, ProviderUnavailable, create, known_types, register

__all__ = ["ProviderError", "ProviderUnavailable", "create", "known_types", "register"]
