"""What the App Runtime may ask of the connection it drives.

The runtime decides (which task runs, what the child's words lead to); the
session speaks and listens. SessionPort is everything the runtime uses of
it, and FloorPort (its `floor`) everything of its replies and the child's
turn, so the runtime never imports the session (the session imports the
runtime and calls it directly) and a test can drive the runtime with
anything that has these members. A new need of the runtime is a member
added here first, then to session/session.py or session/floor.py. A new
fact about one turn is a field of pipeline/reply.py's Turn instead.
ModeDriver is what a mode's handler uses of the runtime, so modes.py and
runtime.py do not import each other either. ConversationStore is what the
runtime uses of the control store (a device's conversation, kept between
connections), so neither the runtime nor the session imports control/.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Coroutine, Protocol

if TYPE_CHECKING:
    from ..config import AppsConfig, SessionConfig
    from ..mcp.device_client import DeviceMcp
    from ..mcp.tools import ToolTable
    from ..pipeline.dialogue import Dialogue
    from ..pipeline.care import CarePort
    from ..pipeline.reply import Reply, Turn
    from ..text.lines import Lines
    from .registry import Task


class FamilyRules(Protocol):
    """A family's limits on talking and the child's usage (the control
    plane's control/family.py; None when the server keeps no control store)."""

    async def refusal(self, device_id: str) -> str | None: ...   # a lines key, or None: may talk

    async def count_talk(self, device_id: str, seconds: float) -> None: ...

    async def count_translation(self, device_id: str) -> None: ...

    async def limits(self, device_id: str) -> dict: ...   # the parent's settings, `language` among them


class FloorPort(Protocol):
    """Who may speak now (session/floor.py): every reply the runtime starts
    or waits for, and the child's side of the turn."""

    last_user_speech: float     # monotonic time the child last spoke (0.0: not yet)
    last_tts_stop: float        # monotonic time of our last `tts stop`

    def start(self, work: Callable[[Reply], Awaitable[Any]], turn: Turn | None = None) -> Reply: ...

    def in_reply(self) -> bool: ...

    async def abort(self, reason: str) -> None: ...

    async def wait_quiet(self) -> None: ...

    async def child_done(self) -> None: ...

    async def say(self, text: str) -> bool: ...

    async def speak(self, reply: Reply, sentences: AsyncIterator[str]) -> bool: ...

    async def greet(self, text: str) -> None: ...

    def farewell(self, text: str) -> None: ...


class SessionPort(Protocol):
    # What the runtime reads of the connection.
    device_id: str
    language: str               # the child's language for lines: "zh", "en"
    hello: dict | None          # the device's hello (its features)
    closed: bool
    mcp: DeviceMcp              # the device's own tools
    tools: ToolTable            # the tools the LLM is offered (device, server, runtime)
    dialogue: Dialogue          # the chat history, tool policy and system prompt
    turn_log: list[dict]        # per answered turn: latency marks (benchmarks read them)
    lines: Lines                # every line it may speak (data/lines.json, the operator's file)
    family: FamilyRules | None  # bedtime and talk time, usage counts
    care: CarePort | None      # the family's store: transcripts, memory (None: no control store)

    @property
    def floor(self) -> FloorPort: ...   # who may speak now; every reply goes through it

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task: ...

    async def show_emotion(self, emotion: str) -> None: ...


class ConversationStore(Protocol):
    """Where a device's conversation is kept between its connections, on
    whichever node they are (store/conversations.py implements it;
    assemble.py hands store.conversations to the sessions as Services(conversations=...))."""

    async def load_conversation(self, device_id: str, max_age_s: float) -> dict | None: ...

    async def save_conversation(self, device_id: str, context: dict) -> bool: ...


class MemoryPort(Protocol):
    """What a mode waits for of the chat app's memory (memory.py's Memory)."""

    async def ready(self) -> None: ...


class RunningTask(Protocol):
    """What the kept conversation (conversation.py) reads of the App Runtime:
    the task it runs now, with the params and source it was started with."""

    task: Task | None
    params: dict
    source: str | None


class ModeDriver(Protocol):
    """What a mode's handler (modes.py) uses of the App Runtime that calls it."""

    session: SessionPort
    cfg: AppsConfig             # the config's `apps` section
    session_cfg: SessionConfig  # the config's `session` section
    task: Task | None           # the running task

    @property
    def memory(self) -> MemoryPort: ...    # the chat app's memory of the child (memory.py)

    @property
    def mode(self) -> str: ...

    async def start_default(self, source: str = ...) -> dict: ...

    async def on_wake(self, text: str) -> None: ...
