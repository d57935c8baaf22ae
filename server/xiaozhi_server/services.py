"""What every session of a process shares: providers, the app registry,
the server's own tools, the set of live sessions, and what the family's
control store lends them (limits, care records, kept conversations, the
household's wake floor). Each shared part is a constructor argument, typed
by the interface the sessions call; assemble.py is the one place that
builds them and hands them in.

Providers are built once per process from the config, and `start()`
loads their models, voices and clients before the first device connects
(in the pool, never on the event loop), so no session pays for a load.
Sessions never build providers themselves, so a test or a benchmark can
hand in its own (e.g. providers that sleep like cloud ones).
"""
from __future__ import annotations

import asyncio
import logging
import sys
from typing import TYPE_CHECKING, Any, Iterable, Protocol

from .pipeline.safety import lexicon
from .providers.llm.none import choose_llm
from .providers.registry import create
from .runtime.runtime import load_registry
from .text.lines import Lines

if TYPE_CHECKING:
    from .mcp.tools import Tool
    from .pipeline.care import CarePort
    from .providers.base import AsrProvider, LlmProvider, TtsLike, VadProvider
    from .runtime.port import ConversationStore, FamilyRules
    from .runtime.registry import Registry

log = logging.getLogger(__name__)

SWITCH_INTERVAL_S = 0.0005


def _parts(provider: Any) -> Iterable[Any]:
    """A provider and the providers it is made of (a router's voices, a chain's members)."""
    yield provider
    for inner in list((getattr(provider, "voices", None) or {}).values()) + list(getattr(provider, "members", ())):
        yield from _parts(inner)


async def warm_up(provider: Any) -> None:
    """Load what a provider needs now; one that fails to load is logged and
    loads again on first use, where its own fallback applies."""
    for part in _parts(provider):
        warm = getattr(part, "warm_up", None)
        if warm is None:
            continue
        try:
            await warm()
        except Exception as e:
            log.warning("could not preload %s: %s", type(part).__name__, e)


class WakeFloor(Protocol):
    """Who answers a wake word among a household's devices (fleet/wake.py
    on a node with a control store; absent, every device answers)."""

    async def claim(self, device_id: str, level: float | None = None, score: float | None = None) -> bool: ...


class Services:
    def __init__(self, config: dict, llm: LlmProvider | None = None, asr: AsrProvider | None = None,
                 tts: TtsLike | None = None, vad: VadProvider | None = None, *,
                 family: FamilyRules | None = None, care: CarePort | None = None,
                 conversations: ConversationStore | None = None, wake_floor: WakeFloor | None = None) -> None:
        """Providers left out are built from the config. The store's parts
        (None without a control store): `family`, a family's limits and usage
        counts (control/family.py); `care`, what the family keeps per device
        (store.care); `conversations`, where each device's conversation is
        kept between connections (store.conversations); `wake_floor`, who answers a
        household's wake word (fleet/wake.py)."""
        self.config = config
        self.lines = Lines.load((config.get("lines") or {}).get("file"))
        self.llm = llm if llm is not None else choose_llm(dict(config.get("llm") or {}),
                                                             lines=self.lines.table["no_llm"],
                                                             prompt=(config.get("prompts") or {}).get("agent"))
        self.asr = asr if asr is not None else create("asr", config["asr"])
        self.tts = tts if tts is not None else create("tts", config["tts"])
        self.vad = vad if vad is not None else create("vad", config["vad"])
        self.registry = load_registry(config.get("apps", {}).get("registry"))
        # The live sessions (session/ imports this module, not the other way round).
        self.sessions: set[Any] = set()
        self._server_tools: list[Tool] = []
        self.family = family
        self.care = care
        self.conversations = conversations
        self.wake_floor = wake_floor

    async def start(self) -> None:
        """Preload every provider (the server calls this before it listens)."""
        # The event loop gives up the GIL at every socket send and recv; a
        # worker thread running Python (VAD batching, codec loops) then keeps
        # it for up to the switch interval, 5 ms by default, before the loop
        # may go on. With many sessions that wait is most of the loop's time
        # (profiled at 30 sessions: a loopback send took 0.66 ms on average,
        # 0.38 ms with 0.5 ms).
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
        for provider in (self.vad, self.asr, self.tts, self.llm):
            await warm_up(provider)
        # The safety filter's word lists and fold tables (0.3-0.6 s to build here, 17 MB): before the
        # first device, not on the event loop at a child's first words.
        await asyncio.get_running_loop().run_in_executor(None, lexicon)

    @property
    def llm_configured(self) -> bool:
        return getattr(self.llm, "configured", True)

    def llm_line(self) -> str:
        """The LLM as the start-up banner names it."""
        if not self.llm_configured:
            return "none configured (chat says so)"
        banner = getattr(self.llm, "banner", None)   # a provider that says more of itself (llm/local.py)
        if banner:
            return banner
        return "configured (%s)" % getattr(self.llm, "model", "openai")

    def set_server_tools(self, tools: Iterable[Tool]) -> None:
        """Tools of the server's own MCP processes, offered to every new session."""
        self._server_tools = list(tools)

    def server_tools(self) -> list[Tool]:
        return list(self._server_tools)

    # ---- what the sessions tell ----

    async def on_session_ready(self, session: Any) -> None:
        """After the hello, with its App Runtime in place (benchmarks extend this)."""
        self.sessions.add(session)

    async def on_session_closed(self, session: Any) -> None:
        self.sessions.discard(session)


class ControlServices:
    """What a process needs when it holds no voice session (the primary of
    worker processes, a control-only node): the config, the app registry
    (the control API checks tasks against it) and the family's limits (the
    OTA answer's time zone); no providers and no models. `sessions` stays
    empty: they live in the workers, or nowhere."""

    def __init__(self, config: dict, *, family: FamilyRules | None = None) -> None:
        self.config = config
        self.registry: Registry = load_registry(config.get("apps", {}).get("registry"))
        self.sessions: set[Any] = set()
        self.family = family

    async def start(self) -> None:
        pass    # no models here
