"""data/mcp_servers.json: which MCP servers the xiaozhi server runs, and how.

    {"servers": {"translate": {
        "command": "python",
        "args": ["-m", "xiaozhi_server.mcp_servers.translate.server"],
        "env": {"TRANSLATE_MAX_CHARS": "500"},
        "enabled": true,
        "call_timeout_s": 20}}}

`command` "python" is this server's own interpreter (sys.executable), so a
server shipped in this package imports the same code; anything else is
run as written (an absolute path, or a name looked up on PATH). `env`
values may say ${NAME}, filled from the server's environment; a value that
comes out empty is left out, so the child sees the variable unset, as the
server did. OPENAI_* (and PYTHONPATH) pass through by default; `env` wins
over them. Optional: `cwd`, `start_timeout_s` (default 15).

A malformed file is refused with a ConfigError naming the field.
"""
import json
import os
import re
import sys
from pathlib import Path
from typing import Iterable, Mapping

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "data" / "mcp_servers.json"
PASSED_PREFIXES = ("OPENAI_",)
PASSED_NAMES = ("PYTHONPATH", "XIAOZHI_MODEL_CACHE")   # the cache: where the offline model host is found
DEFAULT_CALL_TIMEOUT_S = 20.0
DEFAULT_START_TIMEOUT_S = 15.0

_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ConfigError(ValueError):
    pass


class ServerSpec:
    """One server entry, resolved against the environment."""

    def __init__(self, name: str, command: str, args: Iterable[str], env: Mapping[str, str], enabled: bool = True,
                 call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S, start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
                 cwd: str | None = None) -> None:
        self.name = name
        self.command = command
        self.args = list(args)
        self.env = dict(env)
        self.enabled = enabled
        self.call_timeout_s = float(call_timeout_s)
        self.start_timeout_s = float(start_timeout_s)
        self.cwd = cwd

    def __repr__(self):
        return "ServerSpec(%r, %r %r)" % (self.name, self.command, self.args)


def expand(value: str, environ: Mapping[str, str]) -> str:
    """`value` with every ${NAME} replaced from `environ` (unset → empty)."""
    return _REF.sub(lambda m: environ.get(m.group(1), ""), value)


def child_env(config_env: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a server process gets on top of the SDK's safe defaults."""
    env = {k: v for k, v in environ.items()
           if (k.startswith(PASSED_PREFIXES) or k in PASSED_NAMES) and v}
    for key, value in config_env.items():
        value = expand(value, environ)
        if value:
            env[key] = value
        else:
            env.pop(key, None)
    return env


def _field(entry, key, kind, where, default):
    if key not in entry:
        return default
    value = entry[key]
    # bool is an int in Python; a timeout of `true` is still a mistake.
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise ConfigError("%s.%s must be %s, not %r" % (where, key, names, value))
    return value


def parse(data: object, environ: Mapping[str, str] | None = None) -> list[ServerSpec]:
    """ServerSpecs (enabled or not) from the parsed JSON document."""
    environ = os.environ if environ is None else environ
    if not isinstance(data, dict) or not isinstance(data.get("servers"), dict):
        raise ConfigError("mcp_servers.json: 'servers' must be an object of name → server")
    specs = []
    for name, entry in data["servers"].items():
        where = "servers.%s" % name
        if not isinstance(entry, dict):
            raise ConfigError("%s must be an object" % where)
        command = _field(entry, "command", str, where, None)
        if not command:
            raise ConfigError("%s.command is required" % where)
        args = _field(entry, "args", list, where, [])
        if not all(isinstance(a, str) for a in args):
            raise ConfigError("%s.args must be a list of strings" % where)
        env = _field(entry, "env", dict, where, {})
        if not all(isinstance(v, str) for v in env.values()):
            raise ConfigError("%s.env values must be strings" % where)
        timeout = _field(entry, "call_timeout_s", (int, float), where, DEFAULT_CALL_TIMEOUT_S)
        start_timeout = _field(entry, "start_timeout_s", (int, float), where, DEFAULT_START_TIMEOUT_S)
        if timeout <= 0 or start_timeout <= 0:
            raise ConfigError("%s: timeouts must be positive" % where)
        cwd = _field(entry, "cwd", str, where, None)
        specs.append(ServerSpec(
            name=name,
            command=sys.executable if command == "python" else expand(command, environ),
            args=[expand(a, environ) for a in args],
            env=child_env(env, environ),
            enabled=_field(entry, "enabled", bool, where, True),
            call_timeout_s=timeout,
            start_timeout_s=start_timeout,
            cwd=expand(cwd, environ) if cwd else None,
        ))
    return specs


def load(path: str | None = None, environ: Mapping[str, str] | None = None) -> list[ServerSpec]:
    """ServerSpecs from the file; a missing file means no servers."""
    file = Path(path or DEFAULT_PATH)
    if not file.exists():
        return []
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ConfigError("%s is not valid JSON: %s" % (file, exc)) from None
    return parse(data, environ)
