"""The chat app's memory of the child across days: a short profile (name,
age, interests, what was learnt, notes) kept in the family's store.

At the session's start the profile is read once and goes into the chat
system prompt (prompts.py); while memory is on the chat LLM is offered
the `remember` tool, which adds what the child just told (merged into the
profile, stored, and in this session's prompt at once). A parent sees,
edits and erases it through the API; with memory off nothing is read,
offered, kept or injected. Without a store (no control plane) there is
no memory at all.
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Callable

from ..mcp.tools import Tool, ToolOutcome
from ..pipeline.care import MAX_ITEM, MAX_NOTES, clean_profile, merged, profile_prompt

if TYPE_CHECKING:
    from .port import SessionPort

log = logging.getLogger(__name__)

REMEMBER = "remember"
_LIST = {"type": "array", "items": {"type": "string", "maxLength": MAX_ITEM}}
REMEMBER_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "description": "the child's name"},
    "age": {"type": "integer", "minimum": 1, "maximum": 18},
    "interests": dict(_LIST, description="new things the child likes"),
    "learnt": dict(_LIST, description="what the child learnt or practised today"),
    "notes": {"type": "string", "maxLength": MAX_NOTES,
              "description": "a short plain fact worth remembering kindly (letters and simple punctuation)"},
}}


class Memory:
    def __init__(self, session: SessionPort, on_change: Callable[[], None]) -> None:
        """on_change(): the profile changed (loaded, or learned): the prompt is built again."""
        self.session = session
        self.on_change = on_change
        self.enabled = False
        self.profile: dict = {}
        self._loading: asyncio.Task | None = None

    def start(self) -> None:
        if self.session.care is not None:
            self._loading = self.session.spawn(self._load())

    async def ready(self) -> None:
        """Until the profile is read (at once when there is nothing to read)."""
        if self._loading is not None and not self._loading.done():
            await asyncio.wait({self._loading})

    async def _load(self):
        care = self.session.care
        try:
            m = await care.memory(self.session.device_id)
        except Exception as e:
            log.warning("[%s] memory not read: %s", self.session.device_id, e)
            return
        self.enabled, self.profile = m["enabled"], m["profile"]
        if self.enabled:
            self.session.tools.add(Tool(
                REMEMBER, "Remember something about the child for the next days: their name, age, new interests, "
                "what they learnt. Call it when the child tells you such a thing; then go on talking.",
                REMEMBER_SCHEMA, "builtin", self._remember))
            self.on_change()

    def prompt(self) -> str:
        return profile_prompt(self.profile) if self.enabled else ""

    async def _remember(self, args: dict) -> ToolOutcome:
        learned, err = clean_profile(args or {}, partial=True)
        care = self.session.care
        if err or care is None:
            return ToolOutcome("error: " + (err or "no memory here"), is_error=True)
        try:
            # merged into what is stored now: a profile a parent erased or edited meanwhile stays so
            profile = merged((await care.memory(self.session.device_id))["profile"], learned)
            kept = await care.set_memory(self.session.device_id, profile)
        except Exception as e:
            log.warning("[%s] memory not stored: %s", self.session.device_id, e)
            return ToolOutcome("error: memory is not available now", is_error=True)
        if not kept:        # a parent turned memory off meanwhile
            self.enabled, self.profile = False, {}
            self.on_change()
            return ToolOutcome("memory is off: nothing was kept")
        self.profile = profile
        self.on_change()
        return ToolOutcome("remembered: " + json.dumps(learned, ensure_ascii=False))
