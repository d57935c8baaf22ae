"""What every session shares: providers, server-side tools, and the hooks
through which the App Runtime decides what a session does.

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
from typing import TYPE_CHECKING, Any, Iterable

from . import protocol as proto
from .providers.llm_none import choose_llm
from .providers.registry import create
from .runtime.registry import Registry
from .runtime.runtime import AppRuntime, TaskError
from .runtime.tools import runtime_tools

if TYPE_CHECKING:
    from .mcp.tools import Tool
    from .providers.base import AsrProvider, LlmProvider, TtsLike, VadProvider
    from .pipeline.listener import Utterance
    from .session.session import Session

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


def _runtime(session: Session) -> AppRuntime:
    """The session's App Runtime, which on_session_ready gives it before the
    session passes on anything the device says."""
    if session.runtime is None:
        raise RuntimeError("session %s has no App Runtime yet" % session.id)
    return session.runtime


class Services:
    def __init__(self, config: dict, llm: LlmProvider | None = None, asr: AsrProvider | None = None,
                 tts: TtsLike | None = None, vad: VadProvider | None = None) -> None:
        self.config = config
        self.llm = llm if llm is not None else choose_llm(config.get("llm"))
        self.asr = asr if asr is not None else create("asr", config["asr"])
        self.tts = tts if tts is not None else create("tts", config["tts"])
        self.vad = vad if vad is not None else create("vad", config["vad"])
        self.registry = Registry.load(config.get("apps", {}).get("registry"))
        self.sessions: set[Session] = set()
        self._server_tools: list[Tool] = []

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

    @property
    def llm_configured(self) -> bool:
        return getattr(self.llm, "configured", True)

    def llm_line(self) -> str:
        """The LLM as the start-up banner names it."""
        if not self.llm_configured:
            return "none configured (chat says so)"
        return "configured (%s)" % getattr(self.llm, "model", "openai")

    def set_server_tools(self, tools: Iterable[Tool]) -> None:
        """Tools of the server's own MCP processes, offered to every new session."""
        self._server_tools = list(tools)

    def server_tools(self) -> list[Tool]:
        return list(self._server_tools)

    # ---- hooks the sessions call ----

    async def on_session_ready(self, session: Session) -> None:
        """After the hello: the session gets its App Runtime and starts at the default app."""
        self.sessions.add(session)
        runtime = session.runtime = AppRuntime(session, self.registry, self.config)
        runtime.adopt_default()
        for tool in runtime_tools(session, runtime):
            session.tools.add(tool)

        async def app_start_task(params):
            try:
                return await runtime.start_app_task(params["app_id"], params["task_id"],
                                                    params.get("params"), params["source"])
            except TaskError as e:
                err = proto.ProtoError(str(e))
                err.code = e.code
                raise err
        session.rpc_handlers[proto.METHOD_APP_START_TASK] = app_start_task
        session.spawn(self._default_entry(session))

    async def _default_entry(self, session):
        """Chat speaks first, unless the device asks for a task of its own at once
        (an alarm's lesson must not be preceded by a chat opener)."""
        grace = float(self.config["apps"].get("opener_grace_s", 1.5))
        if session.hello and (session.hello.get("features") or {}).get("mcp"):
            try:
                await asyncio.wait_for(session.mcp.ready.wait(), grace)
            except asyncio.TimeoutError:
                pass
            await asyncio.sleep(0.05)  # a request sent right after the tool list
        else:
            await asyncio.sleep(min(grace, 0.3))
        if session.runtime.explicit or session.closed or session.last_user_speech:
            return  # a task was asked for, or the child is already talking: no opener
        await session.runtime.start_default(proto.SOURCE_DEFAULT_CHAT)

    async def on_session_closed(self, session: Session) -> None:
        self.sessions.discard(session)
        if session.runtime is not None:
            session.runtime.close()

    async def route_user_text(self, session: Session, text: str, utterance: Utterance | None = None) -> None:
        """What a user's words lead to: the App Runtime routes by mode."""
        await _runtime(session).route(text, utterance)

    async def on_wake(self, session: Session, text: str) -> None:
        """A wake word arrived (listen detect)."""
        await _runtime(session).on_wake(text)

    async def on_listen_start(self, session: Session) -> None:
        """The device opened its microphone."""
        await _runtime(session).on_listen_start()
