"""Server configuration: typed sections, a YAML file, then env vars.

Precedence, lowest first: the sections' defaults below, the YAML file
(written on first start with every default and its doc as comments, so a
person can read and edit it), then environment variables (ENV_OVERRIDES; the
LLM also reads the `openai` client's own OPENAI_BASE_URL / OPENAI_API_KEY /
OPENAI_MODEL). load() gives the merged dict; a component takes its section
typed (`SessionConfig.of(config)`) and reads its fields, whose defaults and
docs are declared here once (config_types.py says how).
"""
import copy
import dataclasses
import ipaddress
import os
from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping

import yaml

from .config_types import ConfigError, Section, commented, setting, unknown

DEFAULT_PATH = os.path.join("var", "server.yaml")

# Each section: its fields with their defaults and docs. The docs are the
# comments of the var/server.yaml written on first start (config_types.commented).
@dataclass(frozen=True)
class ServerConfig(Section):
    """Where the server listens."""
    NAME = "server"
    host: str = setting("127.0.0.1", "Interface to bind; loopback by default: anything else needs a token or "
                                     "--insecure.")
    ws_port: int = setting(8000, "The devices' WebSocket port.")
    ws_path: str = setting("/xiaozhi/v1/", "The WebSocket's path.")
    http_port: int = setting(8003, "OTA, the parents' API and the console.")
    public_host: str | None = setting(None, "Host name devices use to reach this server (OTA answers carry it); "
                                            "empty: the name the device asked for.")
    workers: int | Literal["auto"] = setting(
        "auto", "Processes that hold the voice sessions, sharing the WebSocket port (docs/server.md "
                "\"Workers\"). \"auto\": one per core under `xiaozhi-server run`; a server embedded in a "
                "program (tests, benchmarks) stays in its one process unless given a number.")


@dataclass(frozen=True)
class TlsConfig(Section):
    """TLS for every listener (docs/security.md, "TLS"). With the certificate and its key the WebSocket is
    wss://, the HTTP port (OTA, the parents' API) https://, and the broker started here gets an mqtts://
    listener (mqtt.tls_port) with the same files; OTA hands out those URLs. Without them every listener is
    plain, which the server refuses off loopback unless allow_plain."""
    NAME = "tls"
    cert: str | None = setting(None, "PEM file of the certificate chain.")
    key: str | None = setting(None, "PEM file of its private key.")
    allow_plain: bool = setting(False, "Plain listeners off loopback (a TLS proxy in front does the TLS).")


@dataclass(frozen=True)
class AuthConfig(Section):
    """Who may connect a device."""
    NAME = "auth"
    tokens: list[str] = setting([], "Tokens accepted in \"Authorization: Bearer <token>\" (or ?authorization=).")
    allowed_devices: list[str] = setting([], "Device-Id values allowed to connect; empty = any device.")
    shared_token_history: bool = setting(
        False, "A session that proved only a shared token (one of `tokens`) may be any device: it gets no kept "
               "conversation, no memory, and its turns are not recorded, unless this is true (docs/security.md).")


@dataclass(frozen=True)
class LimitsConfig(Section):
    """What one client may cost the server (docs/security.md). A connection is pending until its HTTP request
    (line and headers) or its device hello has arrived; past max_pending a new one closes the oldest pending
    one, past max_connections new ones are refused. Rates are per connection."""
    NAME = "limits"
    http_header_timeout_s: float = setting(10, "Seconds for an HTTP request's line and headers.")
    http_body_timeout_s: float = setting(10, "Seconds for an HTTP request's body.")
    http_max_body: int = setting(65536, "Largest HTTP request body, in bytes.")
    http_max_connections: int = setting(2048, "Open HTTP connections.")
    http_max_pending: int = setting(1024, "HTTP connections whose request has not arrived yet.")
    ws_handshake_timeout_s: float = setting(10, "Seconds for a WebSocket handshake.")
    ws_max_connections: int = setting(1024, "Open WebSocket connections.")
    ws_max_pending: int = setting(512, "WebSocket connections whose device hello has not arrived yet.")
    ws_binary_per_s: float = setting(50, "Audio frames per second (audio is ~17 frames/s).")
    ws_binary_burst: float = setting(300, "Audio frames at once (covers buffered wake-word audio).")
    ws_text_per_s: float = setting(20, "Text messages per second.")
    ws_text_burst: float = setting(60, "Text messages at once.")
    ws_flood_close_s: float = setting(2, "Over the rate this long without a quiet second: closed with 1008.")
    log_interval_s: float = setting(10, "Repeated log lines (refusals, drops) are summarised once per interval.")


@dataclass(frozen=True)
class SessionConfig(Section):
    """One device's conversation."""
    NAME = "session"
    hello_timeout_s: float = setting(10, "A connection that sends no hello within this long is closed.")
    idle_timeout_s: float = setting(120, "Say goodbye after this long without the user speaking.")
    wake_words: list[str] = setting(["你好小智", "小智小智", "小智", "hi esp", "hey xiaozhi", "hi xiaozhi", "xiaozhi"],
                                    "Words a device reports as its wake word: not a question to answer.")
    wake_quiet_ms: int = setting(
        1000, "After a wake word the child may go straight on; the short greeting comes only after this much "
              "quiet (ms of heard audio), since stock firmware mutes its mic while the server speaks.")
    exit_phrases: list[str] = setting(["再见", "拜拜", "退下吧", "goodbye", "bye bye", "bye-bye"],
                                      "Words that end the conversation (said in a short utterance).")
    language: str = setting("zh", "The language spoken until the child's words say otherwise.")
    max_tool_rounds: int = setting(4, "Tool-call rounds per user turn before the model must answer in words.")
    tool_timeout_s: float = setting(10, "Seconds a device tool may take to answer.")
    history_turns: int = setting(10, "Turns of history kept per session (a turn = user + assistant).")


@dataclass(frozen=True)
class PromptsConfig(Section):
    """What the language model is told (runtime/prompts.py)."""
    NAME = "prompts"
    agent: str = setting(
        "You are Xiaozhi, a warm, patient voice companion for a young child. "
        "Answer in the language the child used, in one to three short spoken "
        "sentences, with simple words and no markdown, lists or emoji codes. "
        "Begin each reply with one emoji that shows your feeling. "
        "To play an English lesson from the SD card, use start_repeater (never a music tool); "
        "to change what you are doing (chat, lessons, translation), use switch_app.",
        "The companion's own system prompt.")
    agent_proactive: str = setting(
        "Take the lead gently: when the child is quiet or unsure, suggest something "
        "to talk about, ask one simple question at a time, and praise their answers.",
        "Added for the tasks that take the lead (system_prompt_mode agent_proactive).")


@dataclass(frozen=True)
class LinesConfig(Section):
    """Every spoken line: data/lines.json, and an operator's file merged over it."""
    NAME = "lines"
    file: str | None = setting(None, "A JSON file of key -> {language: text} merged over data/lines.json "
                                     "(a bad file stops the server at start).")


@dataclass(frozen=True)
class AppsConfig(Section):
    """The App Runtime: the apps and how chat opens."""
    NAME = "apps"
    registry: str | None = setting(None, "The app registry; empty = the one shipped in data/apps.json.")
    opener: Literal["lines", "llm"] = setting("lines", "How chat opens: \"lines\" (one of the opener lines) or "
                                                       "\"llm\" (the model greets).")
    opener_lines: dict | None = setting(None, "{language: [texts]} in place of the lines file's `opener` "
                                              "(data/lines.json); an empty list says nothing.")
    reinvite_lines: dict | None = setting(None, "{language: [texts]} in place of the lines file's `reinvite`.")
    reinvite_after_s: float = setting(20, "Seconds of silence after the opener before one more invitation.")
    max_reinvites: int = setting(1, "How many invitations after the opener.")
    opener_grace_s: float = setting(1.5, "How long a new session waits for the device's own task request (an "
                                         "alarm's lesson, say) before chat speaks first.")
    auto_listen_grace_s: float = setting(1.5, "listen start within this long after our tts stop is the device "
                                              "going back to listening on its own, not the user asking for chat.")
    exit_translation_phrases: list[str] = setting(
        ["退出翻译", "不翻译了", "不用翻译了", "回到聊天", "我们来聊天吧", "聊会天吧",
         "exit translation", "stop translating", "stop translation", "back to chat"],
        "Words that leave translation for chat, matched inside a short utterance, ignoring case, spaces, "
        "punctuation and 儿 (text/phrases.py).")


@dataclass(frozen=True)
class VadConfig(Section):
    """Voice activity and the end of a turn. A pause shorter than the commit silence is the child taking a
    breath: the words are joined and nothing is cut. Other keys: the provider's (docs/providers.md)."""
    NAME = "vad"
    PROVIDER_KIND = True
    type: str = setting("silero", "The voice activity detector (docs/providers.md).")
    silence_ms: int = setting(160, "Silence that ends a turn speculatively (ASR runs, the reply is prepared).")
    commit_silence_ms: int = setting(700, "The reply is heard after this much silence (pipeline/turn_words.py) "
                                          "when the words are neither a question nor unfinished.")
    commit_question_ms: int = setting(500, "The same after a question.")
    commit_stable_question_ms: int = setting(400, "The same after a question a streaming ASR's two passes agree on "
                                                  "(its final text says what its partial text said).")
    commit_unfinished_ms: int = setting(1200, "The same after \"and\", \"um\" or a comma.")
    threshold: float = setting(0.5, "Speech probability above which a frame is speech.")
    early_reply: bool = setting(True, "With a streaming ASR the reply starts on its streaming words before the "
                                      "final text, heard only if the final says the same words "
                                      "(pipeline/early_reply.py).")


@dataclass(frozen=True)
class AsrConfig(Section):
    """Speech recognition: Whisper base by default; its language detection chooses between the two the
    product speaks, beam 5 (docs/providers.md, the figures in docs/bench.md). Other keys: the provider's."""
    NAME = "asr"
    PROVIDER_KIND = True
    PROVIDER_DEFAULTS = {
        "languages": (["zh", "en"], "Whisper: the languages its detection chooses among."),
        "beam_size": (5, "Whisper: the beam (1 is faster, 5 makes fewer errors)."),
    }
    type: str = setting("whisper", "The recogniser (docs/providers.md).")
    language: str | None = setting(None, "language: zh for a child who speaks only Chinese (fewer errors); "
                                         "unset: detected.")
    command_words: dict | None = setting(None, "{language: [words]} a child of that language is likely to say, "
                                               "given to the recogniser as its prompt or hotwords when a parent "
                                               "set the child's language; empty: pipeline/asr.py's COMMAND_WORDS.")


@dataclass(frozen=True)
class TtsConfig(Section):
    """Speech synthesis. Other keys: the provider's (docs/providers.md)."""
    NAME = "tts"
    PROVIDER_KIND = True
    PROVIDER_DEFAULTS = {
        "providers": ([{"type": "router"}, {"type": "espeak", "voice": "en-us"}],
                      "fallback: the voices tried in turn (router: the language's own voice)."),
    }
    type: str = setting("fallback", "The voice (docs/providers.md).")


@dataclass(frozen=True)
class LlmConfig(Section):
    """The language model. Other keys: the provider's (docs/providers.md); OPENAI_BASE_URL / OPENAI_API_KEY /
    OPENAI_MODEL are read too."""
    NAME = "llm"
    PROVIDER_KIND = True
    type: str | None = setting(None, "type unset: OpenAI-compatible if OPENAI_* is set, else the \"no model\" "
                                     "line.")


@dataclass(frozen=True)
class VisionConfig(Section):
    """Where a device's camera photos are explained (an explain-image HTTP endpoint, as stock servers run).
    Handed to devices in MCP initialize; without it the device's self.camera.* tools are not offered."""
    NAME = "vision"
    explain_url: str | None = setting(None, "The endpoint's URL.")
    token: str = setting("", "The bearer token devices send it.")


@dataclass(frozen=True)
class MqttConfig(Section):
    """The devices' MQTT control channel and its broker."""
    NAME = "mqtt"
    url: str | None = setting(None, "Empty: start Debian's mosquitto on 127.0.0.1:<port> if nothing listens "
                                    "there; it refuses anonymous clients and checks each device's credentials "
                                    "and topics.")
    port: int = setting(1883, "The port of the broker started here.")
    link_port: int = setting(0, "The loopback port of the broker started here that takes only the server's own "
                                "link (broker/broker.py); 0: a free one at each start. Set it when a firewall "
                                "or a second server on this host must know it.")
    tls_port: int = setting(8883, "The broker started here listens for devices with TLS on this port of "
                                  "server.host when tls.cert is set (its plain port stays on loopback).")
    ca_file: str | None = setting(None, "A configured mqtts:// broker's certificate is checked against this CA "
                                        "bundle (PEM); empty: the system's CAs.")
    auth_dir: str | None = setting(None, "Server secret and the device logins of the broker started here (0600); "
                                         "empty: `mqtt` beside control.db_path.")
    admin_user: str | None = setting(None, "The broker's dynamic security admin (mosquitto 2's plugin): every "
                                           "node provisions and revokes device logins with it. For the broker "
                                           "started here: xiaozhi-admin; for mqtt.url without it no device gets "
                                           "a login there.")
    admin_password: str | None = setting(None, "Its password; for the broker started here: derived from the "
                                               "server secret.")
    allow_open_broker: bool = setting(False, "A broker that takes anonymous clients or wrong passwords stops the "
                                             "server at start unless this is true (a test's broker, a closed "
                                             "network).")


@dataclass(frozen=True)
class ControlConfig(Section):
    """The parents' API and its store (authoritative for schedules)."""
    NAME = "control"
    db_path: str = setting(os.path.join("var", "control.db"), "The SQLite file of the store.")
    db_url: str | None = setting(None, "A PostgreSQL database instead (postgresql://user:password@host:5432/"
                                       "dbname), which nodes share (docs/deploy.md).")
    api_token: str | None = setting(None, "Bearer token for /api/...; required always when set, and the API "
                                          "refuses every call without one when the server is not on loopback.")
    reconnect_max_s: float = setting(5.0, "Longest wait between two reconnect attempts to the MQTT broker.")
    max_in_flight: int = setting(8, "Per device: requests waiting for the device's ack (0 = no pacing).")
    max_queued: int = setting(32, "Per device: requests queued behind them; past both the API answers 429.")
    default_timezone: str = setting("Asia/Shanghai", "A device's days (its usage, its bedtime) are in its own "
                                                     "time zone, set with its limits; this one until a parent "
                                                     "sets it.")
    usage_retention_days: float = setting(90, "Usage per day (talk time, lessons, translations) older than this "
                                              "is deleted.")


@dataclass(frozen=True)
class ActivationConfig(Section):
    """Activation codes a device shows until a parent approves it (with auth.tokens). Behind a reverse proxy
    every device has the proxy's address: raise per_address."""
    NAME = "activation"
    ttl_s: float = setting(600, "How long one code lives.")
    max_waiting: int = setting(100, "Codes waiting in all.")
    per_address: int = setting(10, "Codes waiting per caller address (an IPv6 /64).")
    per_prefix: int = setting(20, "Codes waiting per device-id prefix (a MAC's first three octets).")


@dataclass(frozen=True)
class ConversationConfig(Section):
    """Each device's recent turns, active app task and its state are kept in the control store, so the
    conversation goes on on whichever node the device reconnects to (docs/deploy.md). Parents opt a device
    out with PUT /api/devices/{id}/conversation {"keep": false} (docs/api.md)."""
    NAME = "conversation"
    keep_hours: float = setting(24, "A child's words are kept this long after the last turn, then purged.")
    max_turns: int = setting(10, "Turns kept.")
    max_bytes: int = setting(16384, "Bytes kept.")
    keep_by_default: bool = setting(True, "Whether a device's conversation is kept until a parent says.")


@dataclass(frozen=True)
class FleetConfig(Section):
    """Nodes sharing one store and one broker (docs/deploy.md). SIGTERM or `xiaozhi-server node drain` stops
    taking new devices, lets replies under way finish, then closes sessions."""
    NAME = "fleet"
    heartbeat_s: float = setting(1.0, "A node says it lives this often.")
    node_ttl_s: float = setting(3.0, "A node silent this long is dropped (on PostgreSQL a killed node is "
                                     "dropped at once: its connection ends).")
    drain_timeout_s: float = setting(20.0, "How long a draining node lets replies under way finish.")
    wake_window_ms: float = setting(400, "Devices of one household (PUT /api/households/{id}) that hear the wake "
                                         "word within this window of each other: only the loudest answers "
                                         "(docs/server.md, Nearest device answers).")


SECTIONS: list[type[Section]] = [
    ServerConfig, TlsConfig, AuthConfig, LimitsConfig, SessionConfig, PromptsConfig, LinesConfig, AppsConfig,
    VadConfig, AsrConfig, TtsConfig, LlmConfig, VisionConfig, MqttConfig, ControlConfig, ActivationConfig,
    ConversationConfig, FleetConfig]

# The defaults as one nested dict, made from the sections (what the file merges over).
DEFAULTS = {cls.NAME: cls.defaults() for cls in SECTIONS}

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


def _flag(name, text):
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError("%s must be true or false" % name)


PROVIDER_SECTIONS = tuple(cls.NAME for cls in SECTIONS if cls.PROVIDER_KIND)


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
SHARED_PROVIDER_KEYS = {cls.NAME: tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
                        for cls in SECTIONS if cls.PROVIDER_KIND}


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
            raise unknown(where, dotted, [path + "." + k if path else k for k in defaults])
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
            raise unknown(where, dotted + "." + str(sub), [dotted + "." + k for k in allowed], reader)
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
    check(cfg, path)
    return cfg


def _strings(values: list[str], dotted: str) -> None:
    for i, v in enumerate(values):
        if not v.strip():
            raise ConfigError("%s[%d] is %r: each entry must be non-empty text" % (dotted, i, v))
        if v != v.strip():
            raise ConfigError("%s[%d] has spaces around it (they are never sent)" % (dotted, i))


def check(cfg: dict, where: str = "config") -> None:
    """Each value of its declared type (the sections' fields: the path and
    the type expected, else), then what would quietly weaken the server:
    `tokens: [""]` (the check would skip the empty token: auth off while a
    token seems set), limits that are not positive, a certificate without
    its key, an API token easy to guess."""
    for cls in SECTIONS:
        cls.of(cfg, where)
    auth = AuthConfig.of(cfg)
    _strings(auth.tokens, "auth.tokens")
    _strings(auth.allowed_devices, "auth.allowed_devices")
    workers = ServerConfig.of(cfg).workers
    if workers != "auto" and workers < 1:
        raise ConfigError("server.workers must be \"auto\" or a whole number of at least 1, got %r" % (workers,))
    numbers: list[tuple[type[Section], str]] = [(ConversationConfig, k) for k in ("keep_hours", "max_turns",
                                                                                "max_bytes")]
    numbers += [(cls, f.name) for cls in (LimitsConfig, FleetConfig, ActivationConfig)
                for f in dataclasses.fields(cls)]
    for cls, key in numbers:
        value = getattr(cls.of(cfg), key)
        if value <= 0:
            raise ConfigError("%s.%s must be a positive number, got %r" % (cls.NAME, key, value))
    tls = TlsConfig.of(cfg)
    if bool(tls.cert) != bool(tls.key):
        raise ConfigError("tls.cert and tls.key go together: set both (PEM files) or neither")
    _api_token(ControlConfig.of(cfg).api_token)
    db_url = ControlConfig.of(cfg).db_url
    if db_url and not db_url.startswith(("postgresql://", "postgres://", "sqlite:///")):
        raise ConfigError("control.db_url must be postgresql://user:password@host/dbname (or sqlite:///path), "
                          "got %r" % db_url)


API_TOKEN_MIN_CHARS = 16
API_TOKEN_MIN_DISTINCT = 8


def _api_token(token: str | None) -> None:
    """control.api_token guards children's transcripts and memory, and
    anyone who reaches the port may guess it: "7" or "aaaaaaaaaaaaaaaa" is
    refused at start, with the reason and a way to make a good one."""
    if token is None:
        return
    if len(token) < API_TOKEN_MIN_CHARS or len(set(token)) < API_TOKEN_MIN_DISTINCT:
        raise ConfigError(
            "control.api_token is too easy to guess (%d characters, %d different): it guards the children's "
            "transcripts and memory, so use at least %d characters with at least %d different ones, e.g. "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(24))'"
            % (len(token), len(set(token)), API_TOKEN_MIN_CHARS, API_TOKEN_MIN_DISTINCT))


def write_defaults(path: str) -> None:
    """A file that shows every default commented out, with its doc: a setting
    left as it is follows the defaults of the version that runs, so a later
    release's better default (a new VAD rule, say) is not frozen at the one
    of the first start."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    header = ("xiaozhi-apps server configuration, written on first start.\n"
              "Every setting is shown commented out with its default, its doc above it: uncomment a\n"
              "section's line and the lines you change. What stays commented follows the running\n"
              "version's defaults. Environment variables override this file: %s,\n"
              "and OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL for the language model.\n"
              % ", ".join(sorted(ENV_OVERRIDES)))
    with open(path, "w", encoding="utf-8") as f:
        f.write(commented(SECTIONS, header))


def cores() -> int:
    """The cores this process may run on (its CPU affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def worker_count(cfg: dict, auto: int = 1) -> int:
    """server.workers as a number; "auto" is `auto` (the CLI passes cores())."""
    workers = ServerConfig.of(cfg).workers
    return auto if workers == "auto" else workers


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
