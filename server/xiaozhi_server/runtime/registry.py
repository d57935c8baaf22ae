"""The app registry (data/apps.json): which apps exist, their tasks, modes,
skills and tool policies. Loaded and checked once at start; a bad file
stops the server with a message that names the field.

Two spellings load into this one model: ours (schema registry/apps.json)
and the seed plan's (registry/seed_apps.json, turned into ours by
seed_registry.py before anything else looks at it).
"""
from __future__ import annotations

import json
import os

from .. import protocol as proto
from . import seed_registry

DEFAULT_PATH = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "apps.json")


class RegistryError(Exception):
    pass


def skill_args(skill: dict, params: dict) -> dict:
    """What a skill is called with: the task's params ("$params"), the ones
    args_from names (those given), or its fixed args."""
    if skill.get("args") == "$params":
        return dict(params)
    if "args_from" in skill:
        return {k: params[k] for k in skill["args_from"] if k in params}
    return dict(skill.get("args") or {})


class Task:
    __slots__ = ("app_id", "id", "title", "mode", "reserved", "skills", "stop_skills", "status_skill",
                 "tool_policy", "tools", "params_schema", "prompt_mode", "prompt", "lines", "on_finish")

    def __init__(self, app_id: str, d: dict) -> None:
        self.app_id = app_id
        self.id = d["id"]
        self.title = d["title"]
        self.mode = d["interaction_mode"]
        self.reserved = bool(d.get("reserved"))
        self.skills = d["skills"]
        self.stop_skills = d.get("stop_skills", [])
        self.status_skill = d.get("status_skill")
        self.tool_policy = d["tool_policy"]
        self.tools = tuple(d.get("tools", ()))
        self.params_schema = d.get("params_schema") or {"type": "object"}
        self.prompt_mode = d["system_prompt_mode"]
        self.prompt = d.get("system_prompt")
        self.lines = d.get("lines") or {}
        self.on_finish = d["on_finish"]

    @property
    def key(self) -> str:
        return "%s.%s" % (self.app_id, self.id)

    def line(self, event: str, language: str) -> str | None:
        """What the task says on event (switched, started) in language, else
        in English; None when the registry gives it no line."""
        texts = self.lines.get(event) or {}
        return texts.get(language) or texts.get("en") or None

    def policy(self) -> frozenset[str] | None:
        """None = every tool of the agent; else the allowed names."""
        return None if self.tool_policy == "inherit_agent" else frozenset(self.tools)

    def __repr__(self):
        return "Task(%s, %s)" % (self.key, self.mode)


class App:
    __slots__ = ("id", "title", "description", "default_task", "tasks")

    def __init__(self, d: dict) -> None:
        self.id = d["id"]
        self.title = d["title"]
        self.description = d.get("description", "")
        self.default_task = d["default_task"]
        self.tasks = {t["id"]: Task(self.id, t) for t in d["tasks"]}


class Registry:
    def __init__(self, data: dict, where: str = "apps.json") -> None:
        if seed_registry.is_seed(data):
            try:
                data = seed_registry.to_model(data, "apps.json")
            except ValueError as e:
                raise RegistryError("%s: %s" % (where, e))
        err = proto.validate("registry.apps", data, "apps.json")
        if err:
            raise RegistryError("%s: %s" % (where, err))
        self.where = where
        self.default_app = data["default_app"]
        self.apps: dict[str, App] = {}
        for i, a in enumerate(data["apps"]):
            if a["id"] in self.apps:
                raise RegistryError("%s: apps[%d].id %r is used twice" % (where, i, a["id"]))
            app = App(a)
            if len(app.tasks) != len(a["tasks"]):
                raise RegistryError("%s: apps[%d] (%s) has two tasks with one id" % (where, i, app.id))
            if app.default_task not in app.tasks:
                raise RegistryError("%s: apps[%d].default_task %r is not one of its tasks"
                                    % (where, i, app.default_task))
            for j, t in enumerate(a["tasks"]):
                bad = proto.unsupported_keywords(t.get("params_schema") or {})
                if bad:
                    raise RegistryError("%s: apps[%d].tasks[%d].params_schema uses %s, which is not checked"
                                        % (where, i, j, ", ".join(bad)))
            self.apps[app.id] = app
        if self.default_app not in self.apps:
            raise RegistryError("%s: default_app %r is not one of the apps" % (where, self.default_app))
        # The board falls back to chat.conversation on its own (after a lesson,
        # at boot): a registry whose default is another task would disagree with it.
        default = self.default()
        if (default.app_id, default.id) != (proto.DEFAULT_APP_ID, proto.DEFAULT_TASK_ID):
            raise RegistryError("%s: default_app %r (its default_task %r) must be %s.%s, the task the board "
                                "goes back to" % (where, self.default_app, default.id,
                                                  proto.DEFAULT_APP_ID, proto.DEFAULT_TASK_ID))

    @classmethod
    def load(cls, path: str | None = None) -> Registry:
        path = path or DEFAULT_PATH
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except OSError as e:
            raise RegistryError("cannot read the app registry %s: %s" % (path, e))
        except ValueError as e:
            raise RegistryError("%s is not valid JSON: %s" % (path, e))
        return cls(data, os.path.basename(path))

    def default(self) -> Task:
        app = self.apps[self.default_app]
        return app.tasks[app.default_task]

    def find(self, app_id: str, task_id: str | None = None) -> Task:
        """The task, or raise LookupError with a reason a person can act on."""
        app = self.apps.get(app_id)
        if app is None:
            raise LookupError("unknown app %r (apps: %s)" % (app_id, ", ".join(sorted(self.apps))))
        task = app.tasks.get(task_id or app.default_task)
        if task is None:
            raise LookupError("app %s has no task %r (tasks: %s)" % (app_id, task_id, ", ".join(sorted(app.tasks))))
        return task
