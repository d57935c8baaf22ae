"""The chat LLM's system prompt for a task: its system_prompt_mode, then its own.

agent: the companion's own prompt (config `prompts.agent`). agent_proactive:
the same, plus taking the lead (`prompts.agent_proactive`). translator and
none: the chat LLM is not used in those tasks (translation goes to the
translate MCP, which has its own prompt), so the agent prompt stays for the
moment the child switches back. A task's `system_prompt` (apps.json) comes
last, so an app brings its own instructions without a line of code.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .registry import Task


def system_prompt(prompts: dict[str, str], task: Task) -> str:
    parts = [prompts["agent"]]
    if task.prompt_mode == "agent_proactive" and prompts.get("agent_proactive"):
        parts.append(prompts["agent_proactive"])
    if task.prompt:
        parts.append(task.prompt)
    return " ".join(parts)
