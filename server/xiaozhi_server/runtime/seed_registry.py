"""The seed plan's spelling of apps.json (phase-1 plan §2.2), turned into the
one registry model (schema registry/apps.json) at load.

The seed keys apps and tasks by id, puts mode, tool policy, tools and
prompt mode on the app, and names a skill's place with `side` and its
arguments with `args_from`. It leaves out what the runtime also needs; the
defaults below make the seed's own example behave like the shipped
registry (docs/runtime.md, "The seed's spelling"):

- titles: the app's `name`, else its id; a task's `name`, else its id;
- default_task: the first task listed;
- interaction_mode, tool_policy, tools, system_prompt_mode, system_prompt,
  lines: the task's, else the app's;
- side: device MCP when left out; `server_mcp` and `server` run on the server;
- a task whose prompt mode is `agent_proactive` opens with the server
  skill `proactive_opener` (the seed: "由 Runtime 主动发起");
- a device skill `<p>.play` stops with `<p>.stop` and reports with
  `<p>.get_status` (stop_skills, status_skill);
- on_finish: `default` when the task has a status skill (it can end by
  itself), else `stay`;
- params_schema: the params named by args_from, each checked as the
  device tool declares it (self.mp3.play's name, repeat,
  power_off_after), nothing else; no args_from = any params.

Errors are found on the seed's own spelling first, so they name its fields.
"""
from .. import protocol as proto

SIDES = {"device": "device", "device_mcp": "device", "server": "server", "server_mcp": "server"}
OPENER = {"name": "proactive_opener", "runs_on": "server"}


def is_seed(data: object) -> bool:
    return isinstance(data, dict) and ("default_app_id" in data or isinstance(data.get("apps"), dict))


def to_model(data: dict, where: str) -> dict:
    """The registry/apps.json form of a seed-spelled registry; ValueError naming the field."""
    err = proto.validate("registry.seed_apps", data, where)
    if err:
        raise ValueError(err)
    apps = []
    for app_id, a in data["apps"].items():
        at = "%s.apps.%s" % (where, app_id)
        _identifier(app_id, at)
        if not a["tasks"]:
            raise ValueError("%s.tasks: an app needs at least one task" % at)
        default_task = a.get("default_task") or next(iter(a["tasks"]))
        if default_task not in a["tasks"]:
            raise ValueError("%s.default_task %r is not one of its tasks (%s)"
                             % (at, default_task, ", ".join(a["tasks"])))
        tasks = []
        for task_id, t in a["tasks"].items():
            _identifier(task_id, "%s.tasks.%s" % (at, task_id))
            tasks.append(_task(a, task_id, t, "%s.tasks.%s" % (at, task_id)))
        app = {"id": app_id, "title": a.get("name") or app_id, "default_task": default_task, "tasks": tasks}
        if a.get("description") or a.get("note"):
            app["description"] = a.get("description") or a["note"]
        apps.append(app)
    if data["default_app_id"] not in data["apps"]:
        raise ValueError("%s: default_app_id %r is not one of the apps (%s)"
                         % (where, data["default_app_id"], ", ".join(data["apps"])))
    return {"version": 1, "default_app": data["default_app_id"], "apps": apps}


def _identifier(key, at):
    err = proto.validate("common.identifier", key, at)
    if err:
        raise ValueError("%s (the key)" % err)


def _skill(s):
    out = {"name": s["name"], "runs_on": SIDES[s.get("side", "device")]}
    if "args_from" in s:
        out["args_from"] = list(s["args_from"])
    return out


def _task(app, task_id, t, at):
    prompt = t.get("system_prompt_mode", app["system_prompt_mode"])
    policy = t.get("tool_policy", app["tool_policy"])
    skills = [_skill(s) for s in t["skills"]]
    if "params_schema" in t:
        params_schema = t["params_schema"]
        bad = proto.unsupported_keywords(params_schema)
        if bad:
            raise ValueError("%s.params_schema uses %s, which is not checked" % (at, ", ".join(bad)))
    else:
        params_schema = _params_schema(skills, at)
    if policy == "allowlist" and "tools" not in t and "tools" not in app:
        raise ValueError("%s: missing required field 'tools' (on the task or its app)" % at)
    if prompt == "agent_proactive" and not any(s["name"] == OPENER["name"] for s in skills):
        skills.insert(0, dict(OPENER))
    plays = [s["name"][:-len(".play")] for s in skills if s["runs_on"] == "device" and s["name"].endswith(".play")]
    if "stop_skills" in t:
        stop = [_skill(s) for s in t["stop_skills"]]
    else:
        stop = [{"name": p + ".stop", "runs_on": "device"} for p in plays]
    status = _skill(t["status_skill"]) if "status_skill" in t else (
        {"name": plays[0] + ".get_status", "runs_on": "device"} if plays else None)
    out = {
        "id": task_id,
        "title": t.get("name") or task_id,
        "interaction_mode": t.get("interaction_mode", app["mode"]),
        "skills": skills,
        "stop_skills": stop,
        "tool_policy": policy,
        "params_schema": params_schema,
        "system_prompt_mode": prompt,
        "on_finish": t.get("on_finish") or ("default" if status else "stay"),
    }
    if status:
        out["status_skill"] = status
    if "tools" in t or "tools" in app:
        out["tools"] = list(t.get("tools", app.get("tools")))
    for key in ("system_prompt", "lines"):
        if key in t or key in app:
            out[key] = t.get(key, app.get(key))
    if t.get("reserved"):
        out["reserved"] = True
    return out


def _params_schema(skills, at):
    """The params args_from passes on, each as the device tool declares it."""
    props, required = {}, []
    for i, s in enumerate(skills):
        if "args_from" not in s:
            continue
        sid = "tool:" + s["name"]
        declared = proto.schema(sid) if s["runs_on"] == "device" and sid in proto.SCHEMAS else {}
        dprops = declared.get("properties", {})
        for name in s["args_from"]:
            if name in props and props[name] != dprops.get(name, {}):
                raise ValueError("%s.skills[%d].args_from: %r is checked differently by another skill"
                                 % (at, i, name))
            props[name] = dprops.get(name, {})
            if name in declared.get("required", ()) and name not in required:
                required.append(name)
    if not props:
        return {"type": "object"}
    out = {"type": "object", "additionalProperties": False, "properties": props}
    if required:
        out["required"] = required
    return out
