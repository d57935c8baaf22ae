"""What the voice side keeps and reads for the child's family, and the
shape of the chat app's memory of the child.

CarePort is the store as a session uses it (control/store_care.py
implements it; the server hands it in as `services.care`, None without
a control store): the device's blocked topics, the safety filter's flags,
the transcripts a parent turned on, and the memory profile.

The profile is short on purpose: it goes into every chat request's system
prompt. `clean_profile` is the one check of its shape, for the parents'
API and for the chat LLM's `remember` tool alike.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Protocol

log = logging.getLogger(__name__)

MAX_NAME = 40
MAX_ITEMS = 20          # interests, learnt
MAX_ITEM = 60
MAX_NOTES = 500
MAX_AGE = 18
PROFILE_FIELDS = ("name", "age", "interests", "learnt", "notes")


class CarePort(Protocol):
    async def topics(self, device_id: str) -> dict: ...

    async def add_flag(self, device_id: str, topic: str, child_said: str, reply_blocked: str | None,
                       redirect_line: str) -> str: ...

    async def privacy(self, device_id: str) -> dict: ...

    async def add_turn(self, device_id: str, app: str, child: str, reply: str) -> bool: ...

    async def memory(self, device_id: str) -> dict: ...

    async def set_memory(self, device_id: str, profile: dict) -> bool: ...


# Writes under way: held here, not by the session, so a session that closes
# (or a reply cut off by the next one) does not cancel a flag or a turn half-way.
_writing: set[asyncio.Task] = set()


def write_later(what: str, device_id: str, write: Awaitable[Any]) -> None:
    """Run a store write to its end in the background; a failure is logged (the talk goes on)."""
    async def run():
        try:
            await write
        except Exception as e:
            log.warning("[%s] %s not stored: %s", device_id, what, e)
    t = asyncio.ensure_future(run())
    _writing.add(t)
    t.add_done_callback(_writing.discard)


def empty_profile() -> dict:
    return {"name": "", "age": None, "interests": [], "learnt": [], "notes": ""}


def clean_profile(value: Any, partial: bool = False) -> tuple[dict, str | None]:
    """(the profile's fields, None) or ({}, why not). partial: only the fields given."""
    if not isinstance(value, dict):
        return {}, "profile must be an object"
    out: dict[str, Any] = {} if partial else empty_profile()
    for k, v in value.items():
        if k not in PROFILE_FIELDS:
            return {}, "profile.%s: unknown field (expected %s)" % (k, ", ".join(PROFILE_FIELDS))
        if k in ("name", "notes"):
            limit = MAX_NAME if k == "name" else MAX_NOTES
            if not isinstance(v, str) or len(v.strip()) > limit:
                return {}, "profile.%s must be text of at most %d characters" % (k, limit)
            out[k] = v.strip()
        elif k == "age":
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= MAX_AGE):
                return {}, "profile.age must be a whole number from 1 to %d, or null" % MAX_AGE
            out[k] = v
        else:
            if not isinstance(v, list) or len(v) > MAX_ITEMS or not all(
                    isinstance(x, str) and 0 < len(x.strip()) <= MAX_ITEM for x in v):
                return {}, "profile.%s must be a list of at most %d texts of 1-%d characters" % (
                    k, MAX_ITEMS, MAX_ITEM)
            seen: list[str] = []
            for x in v:
                if x.strip() not in seen:
                    seen.append(x.strip())
            out[k] = seen
    return out, None


def merged(profile: dict, learned: dict) -> dict:
    """The profile with what the chat model learned: text fields replaced,
    lists extended (the oldest items dropped past MAX_ITEMS)."""
    out = dict(empty_profile(), **profile)
    for k, v in learned.items():
        if isinstance(v, list):
            items = [x for x in out.get(k) or [] if x not in v] + v
            out[k] = items[-MAX_ITEMS:]
        elif v not in ("", None):
            out[k] = v
    return out


def profile_prompt(profile: dict) -> str:
    """The profile as a line of the system prompt; "" when it holds nothing."""
    parts = []
    if profile.get("name"):
        parts.append("name: %s" % profile["name"])
    if profile.get("age"):
        parts.append("age: %d" % profile["age"])
    for k in ("interests", "learnt"):
        if profile.get(k):
            parts.append("%s: %s" % (k, ", ".join(profile[k])))
    if profile.get("notes"):
        parts.append("notes: %s" % profile["notes"])
    if not parts:
        return ""
    return ("What you remember about the child from earlier days (use it kindly, do not recite it): "
            + "; ".join(parts) + ".")
