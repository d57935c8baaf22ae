"""The local model's tool decision: which tool the child's words ask for.

A 1.5B model does not call tools reliably in its own format, so a turn
with tools first asks for a decision under a grammar (llguidance's Lark,
which llama.cpp applies at sampling time): the call as JSON, each tool's
arguments under its own input schema, or `none` to answer in words.

Three things keep it short and right on a small model:
- the assistant's reply is begun for it (`{"tool":"`), so the model
  writes only the tool's name and arguments: `none` is one token, where
  the whole object was seven, each ~0.13 s on 2 cores;
- examples of what children say, one line per offered tool (EXAMPLES
  below), sit with the tool list in the prompt the host keeps cached: with
  them "let's translate" switches app instead of starting a lesson
  (docs/bench.md has the counts).
"""
from __future__ import annotations

import json
from typing import Any

# The reply is begun with this; the model writes the rest of the object.
OPENING = '{"tool":"'

INSTRUCTION = ("When asked for a decision: which tool does the child's last message ask for? Reply with the call as "
               'JSON: {"tool": name, "args": {...}}, or {"tool": "none"} when no tool is needed.')
CLOSING = "Questions about the world and chat need no tool."

# What a child says -> the call it asks for. One entry per tool (or per app
# for switch_app); shown only when that tool (and app id) is offered.
EXAMPLES: list[tuple[str, str, dict[str, Any]]] = [
    ("Make it louder.", "self.audio_speaker.set_volume", {"volume": 80}),
    ("我们聊天吧", "switch_app", {"app_id": "chat"}),
    ("Help me translate.", "switch_app", {"app_id": "english_translation"}),
    ("我们来翻译吧", "switch_app", {"app_id": "english_translation"}),
    ("我要学英语", "switch_app", {"app_id": "english_learning"}),
    ("My name is Tom.", "remember", {"name": "Tom"}),
    ("我叫小红。", "remember", {"name": "小红"}),
    ("I am six.", "remember", {"age": 6}),
    ("I like trains.", "remember", {"interests": ["trains"]}),
    ("Play lesson002 two times.", "start_repeater", {"name": "lesson002", "repeat": 2}),
    ("Stop the lesson.", "self.mp3.stop", {}),
]
NO_TOOL = ("Why is the grass green?", "How many wheels does a car have?", "讲个故事吧", "What is my name?")


def _offered(tools: list[dict]) -> dict[str, dict]:
    """name -> the tool's input schema."""
    out = {}
    for t in tools:
        f = t.get("function") or {}
        params = dict(f.get("parameters") or {})
        params.setdefault("type", "object")
        params.setdefault("properties", {})
        out[str(f.get("name"))] = params
    return out


def _fits(args: dict, schema: dict) -> bool:
    """The example's arguments are ones this tool takes (an app id in its enum)."""
    props = schema.get("properties") or {}
    for k, v in args.items():
        if k not in props:
            return False
        enum = props[k].get("enum")
        if enum is not None and v not in enum:
            return False
    return True


def _call(name: str, args: dict | None) -> str:
    d: dict[str, Any] = {"tool": name}
    if args is not None:
        d["args"] = args
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


def _key(name: str) -> str:
    # A device's self.mp3.stop reaches the model as self_mp3_stop (mcp/tools.py sanitize).
    return "".join(c if c.isalnum() else "_" for c in name)


def instruction(tools: list[dict]) -> str:
    """The decision's instruction with examples for the offered tools."""
    offered = {_key(name): (name, schema) for name, schema in _offered(tools).items()}
    lines = [INSTRUCTION, "Examples:"]
    for said, name, args in EXAMPLES:
        hit = offered.get(_key(name))
        if hit is not None and _fits(args, hit[1]):
            lines.append('"%s" -> %s' % (said, _call(hit[0], args)))
    lines += ['"%s" -> %s' % (said, _call("none", None)) for said in NO_TOOL]
    lines.append(CLOSING)
    return "\n".join(lines)


def grammar(tools: list[dict]) -> str:
    """What may follow OPENING: `none"}`, or a tool's name and its arguments
    under the tool's own schema, as compact JSON (every space the model
    writes is a token it decodes)."""
    rules, alts = [], ['"none\\"}"']
    for i, (name, schema) in enumerate(_offered(tools).items()):
        schema = dict(_for_grammar(schema), **{"x-guidance": {"whitespace_flexible": False}})
        rules.append("call%d: %s %%json %s \"}\"" % (i, json.dumps(name + '","args":'), json.dumps(schema)))
        alts.append("call%d" % i)
    return "%llguidance {}\nstart: " + " | ".join(alts) + "\n" + "\n".join(rules) + "\n"


# The string formats llguidance writes; any other (the protocol's own sd_name,
# hh:mm) fails the whole grammar, and the host then decides unconstrained.
GRAMMAR_FORMATS = frozenset(("date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"))


def _for_grammar(schema: Any) -> Any:
    """A tool's schema as llguidance takes it: formats it does not know
    dropped (the tool checks its own arguments), oneOf read as anyOf."""
    if isinstance(schema, list):
        return [_for_grammar(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k == "format" and isinstance(v, str) and v not in GRAMMAR_FORMATS:
            continue
        if k in ("properties", "$defs", "definitions") and isinstance(v, dict):
            out[k] = {name: _for_grammar(sub) for name, sub in v.items()}    # names, not keywords
        elif k in ("enum", "const", "default", "examples"):
            out[k] = v
        else:
            out["anyOf" if k == "oneOf" else k] = _for_grammar(v)
    return out


def parse_call(text: str, tools: list[dict]) -> tuple[str, dict] | None:
    """(tool, args) when `text` is a whole call to one of `tools` (the
    decision's, OPENING included, or one written as an answer); None for
    `{"tool":"none"}` or anything that is not a whole call."""
    try:
        d = json.loads(text.strip())
    except ValueError:
        return None
    if not isinstance(d, dict) or d.get("tool") not in _offered(tools):
        return None
    args = d.get("args")
    return d["tool"], (args if isinstance(args, dict) else {})
