"""The tool table one session's LLM sees: device tools, server MCP tools and
the server's own tools, under names the LLM accepts, mapped back on call.

Names given to the LLM are sanitised as stock servers do (any character
outside [A-Za-z0-9_-] and CJK becomes "_": self.audio_speaker.set_volume ->
self_audio_speaker_set_volume). A policy (an allowlist of real or
sanitised names) filters what the LLM is offered AND what the executor
runs: a call to a name outside it is refused even if the model invents it.
"""
import json
import logging
from typing import Any, Awaitable, Callable, Collection, Iterable

from ..text.lang import is_han

log = logging.getLogger(__name__)


def sanitize(name: str) -> str:
    return "".join(c if (c.isascii() and (c.isalnum() or c in "_-")) or is_han(c) else "_" for c in name)


def needs_vision(name: str) -> bool:
    """A device camera tool: stock firmware's self.camera.take_photo, the
    browser page's self_camera_take_photo, xiaozhi-sdk's and py-xiaozhi's
    take_photo. Each sends its photo to the vision endpoint handed over in
    MCP initialize, so without one it can only fail."""
    n = sanitize(name)
    return n.startswith("self_camera_") or n == "take_photo"


class ToolOutcome:
    """What a tool call gives back to the dialogue.

    text goes to the LLM as the tool result. end_turn stops the dialogue
    after this call (a task took over, e.g. the repeater). say, when set,
    is spoken to the user instead of asking the LLM again."""

    __slots__ = ("text", "is_error", "end_turn", "say")

    def __init__(self, text: str, is_error: bool = False, end_turn: bool = False, say: str | None = None) -> None:
        self.text = text
        self.is_error = is_error
        self.end_turn = end_turn
        self.say = say

    def __repr__(self):
        return "ToolOutcome(%r, is_error=%r, end_turn=%r)" % (self.text, self.is_error, self.end_turn)


# None = every tool of the agent; else the allowed real or sanitised names.
Policy = Collection[str] | None
# What a tool runs: its arguments -> a ToolOutcome, or a result made into one.
ToolRun = Callable[[dict], Awaitable[Any]]


class Tool:
    """name: the real name (e.g. self.mp3.play); origin: device | server | builtin.
    run: async callable(arguments dict) -> ToolOutcome."""

    __slots__ = ("name", "llm_name", "description", "schema", "origin", "run")

    def __init__(self, name: str, description: str | None, schema: dict | None, origin: str, run: ToolRun) -> None:
        self.name = name
        self.llm_name = sanitize(name)
        self.description = description or ""
        self.schema = schema or {"type": "object", "properties": {}}
        self.origin = origin
        self.run = run

    def declaration(self) -> dict[str, Any]:
        """The OpenAI Chat Completions form."""
        return {"type": "function", "function": {
            "name": self.llm_name, "description": self.description, "parameters": self.schema}}


# Origins a device tool may never replace: a device naming a tool `translate`
# or `switch.app` (switch_app for the LLM) must not take over the server's.
PROTECTED = ("server", "builtin")


class ToolTable:
    def __init__(self) -> None:
        self._by_llm: dict[str, Tool] = {}

    def add(self, tool: Tool) -> bool:
        """Add a tool under its LLM name; False if refused: a device tool whose
        LLM name is a server or built-in tool's (those always keep the name)."""
        old = self._by_llm.get(tool.llm_name)
        if old is not None and old.origin in PROTECTED and tool.origin not in PROTECTED:
            log.warning("device tool %s refused: %s is the server's tool %s", tool.name, tool.llm_name, old.name)
            return False
        if old is not None and old.name != tool.name:
            log.warning("tool %s hides %s (same name for the LLM)", tool.name, old.name)
        self._by_llm[tool.llm_name] = tool
        return True

    def replace_origin(self, origin: str, tools: Iterable[Tool]) -> None:
        """Swap every tool of one origin (a fresh device tool list, say)."""
        for k in [k for k, t in self._by_llm.items() if t.origin == origin]:
            del self._by_llm[k]
        for t in tools:
            self.add(t)

    def names(self) -> list[str]:
        return sorted(t.name for t in self._by_llm.values())

    def allowed(self, tool: Tool, policy: Policy) -> bool:
        """policy None = every tool; else a collection of real or sanitised names."""
        if policy is None:
            return True
        return tool.name in policy or tool.llm_name in policy or tool.llm_name in {sanitize(p) for p in policy}

    def declarations(self, policy: Policy = None) -> list[dict[str, Any]]:
        return [t.declaration() for _k, t in sorted(self._by_llm.items()) if self.allowed(t, policy)]

    def get(self, llm_or_real_name: str) -> Tool | None:
        return self._by_llm.get(sanitize(llm_or_real_name))

    async def call(self, llm_name: str, arguments: dict | None, policy: Policy = None) -> ToolOutcome:
        """Run one tool call from the LLM; never raises for a bad call."""
        tool = self._by_llm.get(llm_name) or self.get(llm_name or "")
        if tool is None:
            return ToolOutcome("error: there is no tool named %s" % llm_name, is_error=True)
        if not self.allowed(tool, policy):
            log.warning("refused tool %s: not allowed in the current app", tool.name)
            return ToolOutcome("error: the tool %s is not available in the current app" % tool.name,
                               is_error=True)
        if arguments is None:
            return ToolOutcome("error: the arguments were not a JSON object", is_error=True)
        try:
            out = await tool.run(arguments)
        except Exception as e:  # a tool's bug must not end the conversation
            log.exception("tool %s failed", tool.name)
            return ToolOutcome("error: %s failed: %s" % (tool.name, e), is_error=True)
        if not isinstance(out, ToolOutcome):
            out = ToolOutcome(out if isinstance(out, str) else json.dumps(out, ensure_ascii=False))
        return out
