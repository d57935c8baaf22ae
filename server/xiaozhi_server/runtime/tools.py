"""The App Runtime's own tools for the chat LLM: switch_app and start_repeater.

Entries through them count as source `voice`. Each ends the chat turn:
what happens next is the new task's business (its skills), after a short
spoken line. switch_app's apps, their descriptions and the line it speaks
(the task's `switched` line) all come from apps.json. start_repeater
starts the task whose skill is the device's player (`self.mp3.play`); it
checks the device's lesson list first, so a missing lesson or a board
without an SD player gets a spoken error and chat goes on; the device's
`self.mp3.play` is what finally runs (never a music tool). The lines here
come from the lines file (refusals, the lesson's name and count).
"""
from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from .. import protocol as proto
from ..mcp.tools import Tool, ToolOutcome
from .lessons import lesson_names, match_lesson
from .runtime import LIST_TOOL, TaskError, task_line

if TYPE_CHECKING:
    from .port import SessionPort
    from .registry import Registry, Task
    from .runtime import AppRuntime

log = logging.getLogger(__name__)

PLAY_TOOL = "self.mp3.play"     # the device's SD player: what start_repeater's task runs


def player_task(registry: Registry) -> Task | None:
    """The task start_repeater starts: the first one that plays on the device's player."""
    for app in registry.apps.values():
        for task in app.tasks.values():
            if not task.reserved and any(s["name"] == PLAY_TOOL and s["runs_on"] == "device" for s in task.skills):
                return task
    return None


def switch_app_description(registry: Registry, apps: list[str], player: Task | None) -> str:
    about = "; ".join("%s = %s" % (a, (registry.apps[a].description or registry.apps[a].title).rstrip("."))
                      for a in apps)
    hint = " For lessons prefer start_repeater." if player is not None else ""
    return ("Switch what Xiaozhi is doing: %s.%s Use it when the child asks to start or stop one of these, "
            "or to go back to chatting." % (about, hint))


def runtime_tools(session: SessionPort, runtime: AppRuntime) -> list[Tool]:
    registry = runtime.registry
    apps = sorted(a for a, app in registry.apps.items()
                  if any(not t.reserved for t in app.tasks.values()))
    player = player_task(registry)

    async def switch_app(args: dict) -> ToolOutcome:
        app_id = args.get("app_id")
        if not isinstance(app_id, str):
            return ToolOutcome("error: app_id must be one of: %s" % ", ".join(apps), is_error=True)
        entry = registry.apps[app_id].tasks.get(registry.apps[app_id].default_task) if app_id in registry.apps else None
        if entry is not None and runtime.active == entry.key:
            # "Let's chat" while chatting: the app goes on as it is, not started
            # again (its opener would greet the child a second time).
            return ToolOutcome(json.dumps(runtime.describe()), end_turn=True,
                               say=task_line(session, entry, "switched"))
        try:
            result = await runtime.start_app_task(app_id, None, {}, proto.SOURCE_VOICE)
        except TaskError as e:
            return ToolOutcome("error: %s" % e, is_error=True)
        if not result["accepted"]:
            return ToolOutcome("refused: " + result["reason"], end_turn=True,
                               say=session.lines.get("switch_refused", session.language) % result["reason"])
        say = task_line(session, registry.find(app_id), "switched")
        return ToolOutcome(json.dumps(result), end_turn=True, say=say)

    async def start_repeater(args: dict) -> ToolOutcome:
        if player is None:   # not offered then; a model may still invent the call
            return ToolOutcome("error: no app plays lessons", is_error=True)
        def L(key):
            return session.lines.get(key, session.language)
        name = str(args.get("name") or "")
        repeat = args.get("repeat", 1)
        if isinstance(repeat, str) and repeat.strip().isdigit():
            repeat = int(repeat)  # models sometimes quote numbers
        power_off = bool(args.get("power_off_after", False))
        if not (session.mcp.has(PLAY_TOOL) and session.mcp.has(LIST_TOOL)):
            return ToolOutcome("error: this device has no SD-card player", end_turn=True, say=L("no_player"))
        text, is_error = await session.mcp.call(LIST_TOOL, {})
        if is_error:
            log.warning("[%s] %s failed: %s", session.device_id, LIST_TOOL, text)
        files = [] if is_error else lesson_names(text)
        found = match_lesson(name, files)
        if found is None:
            return ToolOutcome("error: no lesson named %s; the card has: %s" % (name, ", ".join(files) or "nothing"),
                               end_turn=True, say=L("lesson_missing") % name)
        params = {"name": found, "repeat": repeat, "power_off_after": power_off}
        try:
            result = await runtime.start_app_task(player.app_id, player.id, params, proto.SOURCE_VOICE,
                                                  listed=files)
        except TaskError as e:
            return ToolOutcome("error: %s" % e, is_error=True)
        if not result["accepted"]:
            return ToolOutcome("refused: " + result["reason"], end_turn=True, say=L("switch_refused") % result["reason"])
        line = L("repeating_then_off" if power_off else "repeating") % (found.rsplit(".", 1)[0], int(repeat))
        return ToolOutcome(json.dumps(result), end_turn=True, say=line)

    tools = [
        Tool("switch_app", switch_app_description(registry, apps, player),
             {"type": "object", "properties": {"app_id": {"type": "string", "enum": apps}}, "required": ["app_id"]},
             "builtin", switch_app),
    ]
    if player is not None:
        tools.append(Tool(
            "start_repeater", "Play an English lesson MP3 from the device's SD card `repeat` times, optionally "
            "powering off afterwards. Use this (never a music tool) for lessons, e.g. 'repeat lesson001 three "
            "times, then power off'.",
            {"type": "object", "properties": {
                "name": {"type": "string", "description": "lesson file name, e.g. lesson001.mp3"},
                "repeat": {"type": "integer", "minimum": 1, "maximum": 100, "default": 1},
                "power_off_after": {"type": "boolean", "default": False}},
             "required": ["name"]},
            "builtin", start_repeater))
    return tools
