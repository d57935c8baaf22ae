"""The chat LLM's system prompt for a task: its system_prompt_mode, then its own.

agent: the companion's own prompt (config `prompts.agent`). agent_proactive:
the same, plus taking the lead (`prompts.agent_proactive`). translator and
none: the chat LLM is not used in those tasks (translation goes to the
translate MCP, which has its own prompt), so the agent prompt stays for the
moment the child switches back. A task's `system_prompt` (apps.json) comes
next, so an app brings its own instructions without a line of code; the
chat app's memory of the child (memory.py) comes last, in the agent modes only.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import PromptsConfig
    from .registry import Task


def system_prompt(prompts: PromptsConfig, task: Task, memory: str = "") -> str:
    parts = [prompts.agent]
    if task.prompt_mode == "agent_proactive" and prompts.agent_proactive:
        parts.append(prompts.agent_proactive)
    if task.prompt:
        parts.append(task.prompt)
    if memory and task.prompt_mode in ("agent", "agent_proactive"):
        parts.append(memory)
    return " ".join(parts)
