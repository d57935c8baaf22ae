"""Server configuration: documented defaults, a YAML file, then env vars.

Precedence, lowest first: DEFAULTS below, the YAML file (written with
these defaults on first start, so a person can read and edit it), then
environment variables (ENV_OVERRIDES; the LLM also reads the `openai`
client's own OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL).
"""
import copy
import difflib
import ipaddress
import os
from typing import Any, Callable, Mapping

import yaml

DEFAULT_PATH = os.path.join("var", "server.yaml")

DEFAULTS = {
    "server": {
        # Loopback by default: binding anything else needs a token or --insecure.
        "host": "127.0.0.1",
        "ws_port": 8000,
        "ws_path": "/xiaozhi/v1/",
        "http_port": 8003,
        # Host name devices use to reach this server (OTA answers carry it).
        "public_host": None,
        # Processes that hold the voice sessions, sharing the WebSocket port
        # (docs/server.md "Workers"). "auto": one per core under
        # `xiaozhi-server run`; a server embedded in a program (tests,
        # benchmarks) stays in its one process unless given a number.
        "workers": "auto",
    },
    # TLS for every listener (docs/security.md, "TLS"): PEM files of the
    # certificate chain and its key. With them the WebSocket is wss://, the
    # HTTP port (OTA, the parents' API) https://, and the broker started here
    # gets an mqtts:// listener (mqtt.tls_port) with the same files; OTA hands
    # out those URLs. Without them every listener is plain, which the server
    # refuses off loopback unless allow_plain (a TLS proxy in front).
    "tls": {"cert": None, "key": None, "allow_plain": False},
    "auth": {
        # Tokens accepted in "Authorization: Bearer <token>" (or ?authorization=).
        "tokens": [],
        # Device-Id values allowed to connect; empty = any device.
        "allowed_devices": [],
        # A session that proved only a shared token (one of `tokens`) may be
        # any device: it gets no kept conversation, no memory, and its turns
        # are not recorded, unless this is true (docs/security.md).
        "shared_token_history": False,
    },
    # What one client may cost the server (docs/security.md). A connection is
    # pending until its HTTP request (line and headers) or its device hello
    # has arrived; past max_pending a new one closes the oldest pending one,
    # past max_connections new ones are refused. Rates are per connection.
    "limits": {
        "http_header_timeout_s": 10,
        "http_body_timeout_s": 10,
        "http_max_body": 65536,
        "http_max_connections": 2048,
        "http_max_pending": 1024,
        "ws_handshake_timeout_s": 10,
        "ws_max_connections": 1024,
        "ws_max_pending": 512,
        # Audio is ~17 frames/s; the burst covers buffered wake-word audio.
        "ws_binary_per_s": 50,
        "ws_binary_burst": 300,
        "ws_text_per_s": 20,
        "ws_text_burst": 60,
        # Over the rate this long without a quiet second: closed with 1008.
        "ws_flood_close_s": 2,
        # Repeated log lines (refusals, drops) are summarised once per interval.
        "log_interval_s": 10,
    },
    "session": {
        "hello_timeout_s": 10,
        # Say goodbye after this long without the user speaking.
        "idle_timeout_s": 120,
        "wake_words": ["你好小智", "小智小智", "小智", "hi esp", "hey xiaozhi", "hi xiaozhi", "xiaozhi"],
        # After a wake word the child may go straight on; the short greeting
        # comes only after this much quiet (ms of heard audio), since stock
        # firmware mutes its mic while the server speaks.
        "wake_quiet_ms": 1000,
        "exit_phrases": ["再见", "拜拜", "退下吧", "goodbye", "bye bye", "bye-bye"],
        "language": "zh",
        # Tool-call rounds per user turn before the model must answer in words.
        "max_tool_rounds": 4,
        "tool_timeout_s": 10,
        # Turns of history kept per session (a turn = user + assistant).
        "history_turns": 10,
    },
    "prompts": {
        "agent": (
            "You are Xiaozhi, a warm, patient voice companion for a young child. "
            "Answer in the language the child used, in one to three short spoken "
            "sentences, with simple words and no markdown, lists or emoji codes. "
            "Begin each reply with one emoji that shows your feeling. "
            "To play an English lesson from the SD card, use start_repeater (never a music tool); "
            "to change what you are doing (chat, lessons, translation), use switch_app."
        ),
        "agent_proactive": (
            "Take the lead gently: when the child is quiet or unsure, suggest something "
            "to talk about, ask one simple question at a time, and praise their answers."
        ),
    },
    # Every spoken line: data/lines.json, and an operator's file of key ->
    # {language: text} merged over it (a bad file stops the server at start).
    "lines": {"file": None},
    "apps": {
        # The app registry; empty = the one shipped in data/apps.json.
        "registry": None,
        # How chat opens: "lines" (one of the opener lines) or "llm" (the model greets).
        "opener": "lines",
        # The opener and the invitation: the lines file's `opener` and
        # `reinvite` (data/lines.json); a {language: [texts]} here replaces them
        # (an empty list says nothing).
        "opener_lines": None,
        "reinvite_lines": None,
        # Seconds of silence after the opener before one more invitation, and how many.
        "reinvite_after_s": 20,
        "max_reinvites": 1,
        # How long a new session waits for the device's own task request
        # (an alarm's lesson, say) before chat speaks first.
        "opener_grace_s": 1.5,
        # listen start within this long after our tts stop is the device going
        # back to listening on its own, not the user asking for chat.
        "auto_listen_grace_s": 1.5,
        # Words that leave translation for chat (seed §10.1 names the last two
        # Chinese ones); matched inside a short utterance, ignoring case,
        # spaces, punctuation and 儿 (text/phrases.py).
        "exit_translation_phrases": ["退出翻译", "不翻译了", "不用翻译了", "回到聊天", "我们来聊天吧", "聊会天吧",
                                     "exit translation", "stop translating", "stop translation", "back to chat"],
    },
    # silence_ms: silence that ends a turn speculatively (ASR runs, the reply is
    # prepared). The reply is heard after a longer silence that the words choose
    # (pipeline/turn_words.py): commit_question_ms after a question,
    # commit_unfinished_ms after "and", "um" or a comma, commit_silence_ms
    # otherwise; commit_stable_question_ms after a question a streaming ASR's
    # two passes agree on (its final text says what its partial text said).
    # A shorter pause is the child taking a breath: the words are joined and
    # nothing is cut. early_reply: with a streaming ASR the reply starts on
    # its streaming words before the final text, heard only if the final
    # says the same words (pipeline/early_reply.py).
    "vad": {"type": "silero", "silence_ms": 160, "commit_silence_ms": 700, "commit_question_ms": 500,
            "commit_stable_question_ms": 400, "commit_unfinished_ms": 1200, "threshold": 0.5,
            "early_reply": True},
    # Whisper base; its language detection chooses between the two the product
    # speaks, beam 5 (docs/providers.md, the figures in docs/bench.md). Set
    # asr.language: zh for a child who speaks only Chinese (fewer errors).
    "asr": {"type": "whisper", "languages": ["zh", "en"], "beam_size": 5},
    "tts": {
        "type": "fallback",
        "providers": [{"type": "router"}, {"type": "espeak", "voice": "en-us"}],
    },
    # Empty: OpenAI-compatible if OPENAI_* is set, else the "no model" line.
    "llm": {},
    # Where a device's camera photos are explained (an explain-image HTTP
    # endpoint, as stock servers run). Handed to devices in MCP initialize;
    # without it the device's self.camera.* tools are not offered to the model.
    "vision": {"explain_url": None, "token": ""},
    "mqtt": {
        # Empty: start Debian's mosquitto on 127.0.0.1:<port> if nothing listens there;
        # it refuses anonymous clients and checks each device's credentials and topics.
        "url": None,
        "port": 1883,
        # The loopback port of the broker started here that takes only the
        # server's own link (control/broker.py); 0: a free one at each start.
        # Set it when a firewall or a second server on this host must know it.
        "link_port": 0,
        # The broker started here listens for devices with TLS on this port
        # of server.host when tls.cert is set (its plain port stays on loopback).
        "tls_port": 8883,
        # A configured mqtts:// broker's certificate is checked against this
        # CA bundle (PEM); empty: the system's CAs.
        "ca_file": None,
        # Server secret and the device logins of the broker started here (0600);
        # empty: `mqtt` beside control.db_path.
        "auth_dir": None,
        # The broker's dynamic security admin (mosquitto 2's plugin): every node
        # provisions and revokes device logins with it. For the broker started
        # here the user defaults to xiaozhi-admin and the password is derived from
        # the server secret; for mqtt.url without them no device gets a login there.
        "admin_user": None,
        "admin_password": None,
        # A broker that takes anonymous clients or wrong passwords stops the
        # server at start unless this is true (a test's broker, a closed network).
        "allow_open_broker": False,
    },
    "control": {
        # The parents' API and its store (authoritative for schedules): the SQLite
        # file db_path, unless db_url names a PostgreSQL database
        # (postgresql://user:password@host:5432/dbname), which nodes share (docs/deploy.md).
        "db_path": os.path.join("var", "control.db"),
        "db_url": None,
        # Bearer token for /api/...; required always when set, and the API
        # refuses every call without one when the server is not on loopback.
        "api_token": None,
        # Longest wait between two reconnect attempts to the MQTT broker.
        "reconnect_max_s": 5.0,
        # Per device: requests waiting for the device's ack, and more queued
        # behind them; past both the API answers 429 (0 = no pacing).
        "max_in_flight": 8,
        "max_queued": 32,
        # A device's days (its usage, its bedtime) are in its own time zone,
        # set with its limits; this one until a parent sets it.
        "default_timezone": "Asia/Shanghai",
        # Usage per day (talk time, lessons, translations) older than this is deleted.
        "usage_retention_days": 90,
    },
    # Activation codes a device shows until a parent approves it (with auth.tokens):
    # how long one lives, and how many may wait in all, per caller address
    # (an IPv6 /64) and per device-id prefix (a MAC's first three octets).
    # Behind a reverse proxy every device has the proxy's address: raise per_address.
    "activation": {
        "ttl_s": 600,
        "max_waiting": 100,
        "per_address": 10,
        "per_prefix": 20,
    },
    # Each device's recent turns, active app task and its state are kept in
    # the control store, so the conversation goes on on whichever node the
    # device reconnects to (docs/deploy.md). A child's words: kept keep_hours
    # after the last turn, then purged; parents opt a device out with
    # PUT /api/devices/{id}/conversation {"keep": false} (docs/api.md).
    "conversation": {
        "keep_hours": 24,
        "max_turns": 10,
        "max_bytes": 16384,
        "keep_by_default": True,
    },
    # Nodes sharing one store and one broker (docs/deploy.md). A node says it
    # lives every heartbeat_s; one silent for node_ttl_s is dropped (on
    # PostgreSQL a killed node is dropped at once: its connection ends).
    # SIGTERM or `xiaozhi-server node drain` stops taking new devices, lets
    # replies under way finish for up to drain_timeout_s, then closes sessions.
    "fleet": {
        "heartbeat_s": 1.0,
        "node_ttl_s": 3.0,
        "drain_timeout_s": 20.0,
        # Devices of one household (PUT /api/households/{id}) that hear the
        # wake word within this window of each other: only the loudest
        # answers (docs/server.md, Nearest device answers).
        "wake_window_ms": 400,
    },
}

# variable -> (section, key, how its text becomes the setting)
ENV_OVERRIDES: dict[str, tuple[str, str, Callable[[str], Any]]] = {
    "XIAOZHI_HOST": ("server", "host", str),
    "XIAOZHI_WS_PORT": ("server", "ws_port", int),
    "XIAOZHI_HTTP_PORT": ("server", "http_port", int),
    "XIAOZHI_PUBLIC_HOST": ("server", "public_host", str),
    "XIAOZHI_WORKERS": ("server", "workers", lambda v: v if v == "auto" else int(v)),
    "XIAOZHI_TOKEN": ("auth", "tokens", lambda v: [t for t in v.split(",") if t]),
    "XIAOZHI_TLS_CERT": ("tls", "cert", str),
    "XIAOZHI_TLS_KEY": ("tls", "key", str),
    "XIAOZHI_TLS_ALLOW_PLAIN": ("tls", "allow_plain", lambda v: _flag("XIAOZHI_TLS_ALLOW_PLAIN", v)),
    "MQTT_URL": ("mqtt", "url", str),
    "XIAOZHI_MQTT_PORT": ("mqtt", "port", int),
    "XIAOZHI_MQTT_LINK_PORT": ("mqtt", "link_port", int),
    "XIAOZHI_DB_URL": ("control", "db_url", str),
    "XIAOZHI_API_TOKEN": ("control", "api_token", str),
    "XIAOZHI_VISION_URL": ("vision", "explain_url", str),
}


class ConfigError(Exception):
    pass


def _flag(name, text):
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError("%s must be true or false" % name)


PROVIDER_SECTIONS = ("llm", "asr", "tts", "vad")


def merge(base: dict, over: dict | None, where: str = "config") -> dict:
    """Deep-merge `over` into a copy of `base` (refuse_unknown has checked its keys).
    A provider section naming another `type` replaces the default one whole (its
    keys belong to another provider); one of the same type, or without a type,
    is merged, so a file that sets `vad.silence_ms` still gets new VAD keys."""
    out = copy.deepcopy(base)
    for key, value in (over or {}).items():
        if value is None and isinstance(out.get(key), dict):
            # `vad:` uncommented with every line under it still commented.
            continue
        mergeable = isinstance(out.get(key), dict) and isinstance(value, dict)
        if mergeable and key in PROVIDER_SECTIONS:
            mergeable = value.get("type", out[key].get("type")) == out[key].get("type")
        if mergeable:
            out[key] = merge(out[key], value, where + "." + key)
        else:
            out[key] = copy.deepcopy(value)
    return out


# Keys of a provider section read by the pipeline, whatever the provider:
# the turn timing in pipeline/listener.py and turn_words.py, and the ASR
# language pipeline/chain.py hands the transcriber.
SHARED_PROVIDER_KEYS = {
    "vad": ("type", "silence_ms", "commit_silence_ms", "commit_question_ms", "commit_stable_question_ms",
            "commit_unfinished_ms", "threshold", "early_reply"),
    "asr": ("type", "language", "command_words"),
    "tts": ("type",),
    "llm": ("type",),
}


def provider_keys(section: str, value: dict) -> set[str] | None:
    """The keys a provider section may hold: the pipeline's own and those the
    chosen provider declares (its OPTIONS, registry.options). None (any key)
    for a type the registry does not know (create() names it at build) or a
    provider that declares none (one registered by a plugin)."""
    from .providers import registry
    default = DEFAULTS[section]
    assert isinstance(default, dict)
    type_name = value.get("type", default.get("type"))
    # An llm section without a type is openai or none, chosen by the
    # environment (providers/llm/none.py, choose_llm): the keys of either.
    names = [type_name] if type_name else ["openai", "none"]
    if not all(isinstance(name, str) for name in names):
        return None     # create() says what a type must be
    keys = set(SHARED_PROVIDER_KEYS[section])
    for name in names:
        try:
            options = registry.options(section, name)
        except registry.ProviderError:
            return None
        if options is None:
            return None
        keys |= options
    return keys


def _unknown(where: str, key, known, reader: str = "") -> ConfigError:
    near = difflib.get_close_matches(str(key), [str(k) for k in known], n=1)
    hint = "; did you mean %s?" % near[0] if near else "; known: %s" % ", ".join(sorted(map(str, known)))
    return ConfigError("%s: unknown setting %s%s%s" % (where, key, reader, hint))


def refuse_unknown(data: dict, where: str = "config", defaults: dict = DEFAULTS, path: str = "") -> None:
    """Refuse a key the server does not read, at any depth, naming its dotted
    path and the nearest known key: `vad: {silense_ms: 300}` would otherwise
    be ignored without a word. A default that is not a non-empty mapping
    ({}, a list, None, a value) is a leaf: what it holds is the user's data
    (device ids, tokens, {language: lines}) and is not checked here. A
    provider section is checked against the keys its provider declares
    (provider_keys), and so is each member provider inside it (_members)."""
    for key, value in data.items():
        dotted = path + "." + str(key) if path else str(key)
        if key not in defaults and not (path == "" and key in PROVIDER_SECTIONS):
            raise _unknown(where, dotted, [path + "." + k if path else k for k in defaults])
        if path == "" and key in PROVIDER_SECTIONS:
            if value is None:
                continue
            if not isinstance(value, dict):
                raise ConfigError("%s: %s must be a mapping of settings, got %r" % (where, dotted, value))
            _refuse_unknown_provider(where, key, dotted, value, provider_keys(key, value))
            continue
        default = defaults[key]
        if isinstance(default, dict) and default:
            if value is None:
                continue
            if not isinstance(value, dict):
                raise ConfigError("%s: %s must be a mapping of settings, got %r" % (where, dotted, value))
            refuse_unknown(value, where, default, dotted)


def _members(kind: str, dotted: str, value: dict):
    """(path, config, keys) of the member providers a provider's config holds:
    a fallback's `providers` list, the router's `en` / `zh` voices. A member
    is a mapping whose `type` the registry knows for this kind (a dict such
    as an LLM's `extra_body` is not one)."""
    from .providers import registry
    for sub, v in value.items():
        found = [("%s.%s" % (dotted, sub), v)] if isinstance(v, dict) else \
            [("%s.%s[%d]" % (dotted, sub, i), m) for i, m in enumerate(v)] if isinstance(v, list) else []
        for where, member in found:
            if isinstance(member, dict) and isinstance(member.get("type"), str):
                try:
                    keys = registry.options(kind, member["type"])
                except registry.ProviderError:
                    continue
                yield where, member, keys


def _refuse_unknown_provider(where: str, kind: str, dotted: str, value: dict, allowed: set | frozenset | None) -> None:
    if allowed is None:
        return
    for sub in value:
        if sub not in allowed:
            reader = " (not read by %s type %s)" % (kind, value["type"]) if value.get("type") else ""
            raise _unknown(where, dotted + "." + str(sub), [dotted + "." + k for k in allowed], reader)
    for member_path, member, keys in _members(kind, dotted, value):
        _refuse_unknown_provider(where, kind, member_path, member, keys)


def load(path: str | None = None, env: Mapping[str, str] | None = None, write_default: bool = True) -> dict:
    """The effective configuration as a dict."""
    env = os.environ if env is None else env
    path = path or DEFAULT_PATH
    data: dict = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            try:
                data = yaml.safe_load(f) or {}
            except yaml.YAMLError as e:
                raise ConfigError("%s is not valid YAML: %s" % (path, e))
        if not isinstance(data, dict):
            raise ConfigError("%s must hold a mapping of sections" % path)
        refuse_unknown(data, path)
    elif write_default:
        write_defaults(path)
    cfg = merge(DEFAULTS, data)
    for var, (section, key, conv) in ENV_OVERRIDES.items():
        if env.get(var):
            try:
                cfg[section][key] = conv(env[var])
            except ValueError:
                raise ConfigError("%s=%r is not a valid %s.%s" % (var, env[var], section, key))
    check(cfg)
    return cfg


def _strings(cfg, section, key, what):
    values = cfg[section].get(key)
    if values is None:
        return
    if not isinstance(values, list):
        raise ConfigError("%s.%s must be a list of %s, got %s %r"
                          % (section, key, what, type(values).__name__, values))
    for i, v in enumerate(values):
        if not isinstance(v, str) or not v.strip():
            raise ConfigError("%s.%s[%d] is %r: each entry must be a non-empty %s"
                              % (section, key, i, v, what[:-1]))
        if v != v.strip():
            raise ConfigError("%s.%s[%d] has spaces around it (they are never sent)" % (section, key, i))


def check(cfg: dict) -> None:
    """Refuse settings that would quietly weaken the server: `tokens: [""]`
    (the check would skip the empty token: auth off while a token seems set),
    a string instead of a list (its characters would become tokens), limits
    that are not positive numbers."""
    _strings(cfg, "auth", "tokens", "token strings")
    _strings(cfg, "auth", "allowed_devices", "device ids")
    workers = cfg.get("server", {}).get("workers", "auto")
    if workers != "auto" and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ConfigError("server.workers must be \"auto\" or a whole number of at least 1, got %r" % (workers,))
    if not isinstance((cfg.get("auth") or {}).get("shared_token_history", False), bool):
        raise ConfigError("auth.shared_token_history must be true or false, got %r"
                          % (cfg["auth"]["shared_token_history"],))
    conversation = cfg.get("conversation") or {}
    if not isinstance(conversation.get("keep_by_default", True), bool):
        raise ConfigError("conversation.keep_by_default must be true or false, got %r"
                          % (conversation["keep_by_default"],))
    numbers = [("conversation", k, v) for k, v in conversation.items() if k != "keep_by_default"]
    for section in ("limits", "fleet", "activation"):
        numbers += [(section, k, v) for k, v in (cfg.get(section) or {}).items()]
    for section, key, value in numbers:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError("%s.%s must be a positive number, got %r" % (section, key, value))
    tls = cfg.get("tls") or {}
    if bool(tls.get("cert")) != bool(tls.get("key")):
        raise ConfigError("tls.cert and tls.key go together: set both (PEM files) or neither")
    if not isinstance(tls.get("allow_plain", False), bool):
        raise ConfigError("tls.allow_plain must be true or false, got %r" % (tls.get("allow_plain"),))
    _api_token(cfg)
    db_url = (cfg.get("control") or {}).get("db_url")
    if db_url and not str(db_url).startswith(("postgresql://", "postgres://", "sqlite:///")):
        raise ConfigError("control.db_url must be postgresql://user:password@host/dbname (or sqlite:///path), "
                          "got %r" % db_url)


API_TOKEN_MIN_CHARS = 16
API_TOKEN_MIN_DISTINCT = 8


def _api_token(cfg: dict) -> None:
    """control.api_token guards children's transcripts and memory, and
    anyone who reaches the port may guess it: "7" or "aaaaaaaaaaaaaaaa" is
    refused at start, with the reason and a way to make a good one."""
    token = (cfg.get("control") or {}).get("api_token")
    if token is None:
        return
    if not isinstance(token, str):
        raise ConfigError("control.api_token must be a string, got %r" % (token,))
    if len(token) < API_TOKEN_MIN_CHARS or len(set(token)) < API_TOKEN_MIN_DISTINCT:
        raise ConfigError(
            "control.api_token is too easy to guess (%d characters, %d different): it guards the children's "
            "transcripts and memory, so use at least %d characters with at least %d different ones, e.g. "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(24))'"
            % (len(token), len(set(token)), API_TOKEN_MIN_CHARS, API_TOKEN_MIN_DISTINCT))


def write_defaults(path: str) -> None:
    """A file that shows every default commented out: a setting left as it is
    follows the defaults of the version that runs, so a later release's better
    default (a new VAD rule, say) is not frozen at the one of the first start."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    shown = yaml.safe_dump(DEFAULTS, allow_unicode=True, sort_keys=False)
    with open(path, "w", encoding="utf-8") as f:
        f.write("# xiaozhi-apps server configuration, written on first start.\n"
                "# Every setting is shown commented out with its default: uncomment a section's\n"
                "# line and the lines you change. What stays commented follows the running\n"
                "# version's defaults. Environment variables override this file: %s,\n"
                "# and OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL for the language model.\n"
                % ", ".join(sorted(ENV_OVERRIDES)))
        f.writelines("# " + line + "\n" if line else "#\n" for line in shown.splitlines())


def cores() -> int:
    """The cores this process may run on (its CPU affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def worker_count(cfg: dict, auto: int = 1) -> int:
    """server.workers as a number; "auto" is `auto` (the CLI passes cores())."""
    workers = cfg["server"].get("workers", "auto")
    return auto if workers == "auto" else int(workers)


def is_loopback(host: str | None) -> bool:
    """True only for an address on this machine's loopback (127.0.0.0/8, ::1)
    or the name localhost. A name like 127.evil.com is a DNS name like any
    other, so it is not loopback; neither is "" or 0.0.0.0 (every interface)."""
    h = (host or "").strip().lower()
    if h in ("localhost", "localhost."):
        return True
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False
