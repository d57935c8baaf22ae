"""How a configuration section is declared, checked and shown (config.py
declares the sections themselves).

A section is a frozen dataclass whose fields are `setting(default, doc)`:
the default and its one-line doc live together, the doc is the comment the
server writes into var/server.yaml on first start, and the field's type is
what a value read from that file must be ("vad.silence_ms: expected a whole
number, got 'abc'"). Components take their section (`VadConfig.of(config)`)
and read typed fields, so no read site repeats a default.
"""
import dataclasses
import difflib
import functools
import textwrap
import types
import typing
from typing import Any, ClassVar, Mapping, TypeVar

import yaml


class ConfigError(Exception):
    pass


def setting(default: Any, doc: str) -> Any:
    """A field with its default and the doc written above it in var/server.yaml."""
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: yaml.safe_load(yaml.safe_dump(default)),
                                 metadata={"doc": doc})
    return dataclasses.field(default=default, metadata={"doc": doc})


S = TypeVar("S", bound="Section")


class Section:
    """Base of the typed sections: NAME is the section's key in the file.
    A provider section (PROVIDER_KIND) also holds the chosen provider's own
    keys, which its provider declares (registry.options) and reads itself:
    they are not fields here, only PROVIDER_DEFAULTS of the default provider."""
    NAME: ClassVar[str]
    PROVIDER_KIND: ClassVar[bool] = False
    # key -> (default, doc): the default provider's own settings (whisper's beam).
    PROVIDER_DEFAULTS: ClassVar[dict[str, tuple[Any, str]]] = {}

    @classmethod
    def of(cls: type[S], config: Mapping, where: str = "config") -> S:
        """This section of a whole configuration (a dict as config.load gives it)."""
        return cls.parse(config.get(cls.NAME) or {}, where)

    @classmethod
    def parse(cls: type[S], values: Mapping, where: str = "config") -> S:
        """The section from its mapping: a key not given takes its default; a
        value of the wrong type, or an unknown key outside a provider
        section, is a ConfigError naming `where` and the dotted path."""
        fields, hints = _declared(cls)   # type: ignore[arg-type]
        given = {}
        for key, value in values.items():
            path = "%s.%s" % (cls.NAME, key)
            if key not in fields:
                if cls.PROVIDER_KIND:
                    continue        # the provider's own key, checked against its OPTIONS
                raise unknown(where, path, ["%s.%s" % (cls.NAME, k) for k in fields])
            if not fits(value, hints[key]):
                raise ConfigError("%s: %s: expected %s, got %r" % (where, path, describe(hints[key]), value))
            given[key] = value
        return cls(**given)

    @classmethod
    def defaults(cls) -> dict:
        """The section's default mapping (config.DEFAULTS is made of these). A
        provider section leaves out its fields whose default is None: they are
        keys a provider of another type may not read (the ASR's `language`)."""
        out: dict = {}
        for f in dataclasses.fields(cls):   # type: ignore[arg-type]
            value = getattr(cls(), f.name)
            if cls.PROVIDER_KIND and value is None:
                continue
            out[f.name] = value
        out.update({k: yaml.safe_load(yaml.safe_dump(v)) for k, (v, _doc) in cls.PROVIDER_DEFAULTS.items()})
        return out

    @classmethod
    def docs(cls) -> dict[str, str]:
        out = {f.name: f.metadata.get("doc", "") for f in dataclasses.fields(cls)}   # type: ignore[arg-type]
        out.update({k: doc for k, (_v, doc) in cls.PROVIDER_DEFAULTS.items()})
        return out


@functools.cache
def _declared(cls: type[Section]) -> tuple[dict[str, dataclasses.Field], dict[str, Any]]:
    """A section's fields and their types, read once per class (a session reads its sections)."""
    return {f.name: f for f in dataclasses.fields(cls)}, typing.get_type_hints(cls)   # type: ignore[arg-type]


def unknown(where: str, key, known, reader: str = "") -> ConfigError:
    near = difflib.get_close_matches(str(key), [str(k) for k in known], n=1)
    hint = "; did you mean %s?" % near[0] if near else "; known: %s" % ", ".join(sorted(map(str, known)))
    return ConfigError("%s: unknown setting %s%s%s" % (where, key, reader, hint))


def fits(value: Any, kind: Any) -> bool:
    """Whether a value read from YAML is of the declared type. A bool is not
    a number (YAML's `yes` would pass as 1); a whole number is a number."""
    if kind is Any:
        return True
    if kind is type(None):
        return value is None
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, k) for k in typing.get_args(kind))
    if origin is typing.Literal:
        return value in typing.get_args(kind)
    if origin is list:
        (item,) = typing.get_args(kind)
        return isinstance(value, list) and all(fits(v, item) for v in value)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, origin or kind)


def describe(kind: Any) -> str:
    """What a type is called in an error a parent reads."""
    if kind is type(None):
        return "nothing (null)"
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(describe(k) for k in typing.get_args(kind))
    if origin is typing.Literal:
        return " or ".join(repr(v) if not isinstance(v, str) else '"%s"' % v for v in typing.get_args(kind))
    if origin is list:
        return "a list of " + {str: "texts"}.get(typing.get_args(kind)[0], "values")
    return {int: "a whole number", float: "a number", str: "text", bool: "true or false",
            dict: "a mapping"}.get(origin or kind, getattr(kind, "__name__", str(kind)))


WIDTH = 96


def commented(sections: list[type[Section]], header: str) -> str:
    """The first-start file: every setting commented out, its doc above it
    as a comment of its own, so removing one leading "#" (and the space after
    it) from every line gives a file that loads to the defaults with the docs
    still comments. The header and the sections' docs start with "##"."""
    lines = ["## " + line if line else "##" for line in header.splitlines()]
    for cls in sections:
        lines.append("#")
        for para in (cls.__doc__ or "").strip().split("\n\n"):
            lines += ["## " + line for line in textwrap.wrap(" ".join(para.split()), WIDTH - 3)]
        defaults = cls.defaults()
        lines.append("# %s:%s" % (cls.NAME, "" if defaults else " {}"))
        docs = cls.docs()
        for key, doc in docs.items():
            for line in textwrap.wrap(doc, WIDTH - 6):
                lines.append("#   # " + line)
            if key not in defaults:
                continue    # a provider key left out of the defaults: its doc says so
            lines += ["#   " + line for line in _shown(key, defaults[key]).splitlines()]
    return "\n".join(lines) + "\n"


def _shown(key: str, value: Any) -> str:
    """`key: value` as YAML: a list of plain values on one line, the rest in blocks."""
    if isinstance(value, list) and not any(isinstance(v, (list, dict)) for v in value):
        return "%s: %s" % (key, yaml.safe_dump(value, allow_unicode=True, default_flow_style=True,
                                                width=1 << 16).strip())
    return yaml.safe_dump({key: value}, allow_unicode=True, sort_keys=False, default_flow_style=False,
                          width=WIDTH)
