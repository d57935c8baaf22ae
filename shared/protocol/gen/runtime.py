# ---- runtime: the same code on the board (MicroPython) and the server ----
# A compact validator for the subset of JSON Schema the generator accepts
# (it refuses any other keyword, so a schema never promises a check that
# this code does not make), plus helpers for the wire formats.
import json
import struct

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x


class ProtoError(ValueError):
    """A message that does not fit the protocol. str(e) is the reason.

    unknown is True when only the message type was not recognised: peers
    ignore such messages (with a log line) instead of refusing them."""

    def __init__(self, reason, unknown=False):
        super().__init__(reason)
        self.reason = reason
        self.unknown = unknown


def _isbool(v):
    return v is True or v is False


def _type_ok(t, v):
    if t == "string":
        return isinstance(v, str)
    if t == "object":
        return isinstance(v, dict)
    if t == "integer":
        if isinstance(v, int):
            return not _isbool(v)
        return isinstance(v, float) and -1e15 < v < 1e15 and v == int(v)
    if t == "boolean":
        return _isbool(v)
    if t == "array":
        return isinstance(v, list)
    if t == "number":
        return isinstance(v, (int, float)) and not _isbool(v)
    if t == "null":
        return v is None
    return False


def _tname(v):
    if v is None:
        return "null"
    if _isbool(v):
        return "boolean"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    return type(v).__name__


def _same(a, b):
    # JSON equality: true is not 1, 1 is 1.0
    if _isbool(a) or _isbool(b):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _show(v):
    s = json.dumps(v)
    return s if len(s) <= 40 else s[:37] + "..."


def _digits(s):
    for c in s:
        if c < "0" or c > "9":
            return False
    return len(s) > 0


def _format_error(fmt, v):
    if fmt == "identifier":
        c = v[:1]
        if not ("a" <= c <= "z"):
            return "must start with a lowercase letter"
        for c in v:
            if not ("a" <= c <= "z" or "0" <= c <= "9" or c == "_"):
                return "may hold only a-z, 0-9 and _"
        return None
    if fmt == "sd_name":
        # A name as the card's listing gives it: "lesson.mp3" or
        # "unit1/lesson.mp3"; nothing that could leave the card's root.
        if "\\" in v or ":" in v:
            return "must be a file name from the card's listing, not a path out of it"
        for part in v.split("/"):
            if not part or part[:1] == ".":
                return "must be a file name from the card's listing, not a path out of it"
        for c in v:
            if c < " ":
                return "must not hold control characters"
        return None
    if fmt == "hh:mm":
        if len(v) != 5 or v[2] != ":" or not _digits(v[:2]) or not _digits(v[3:]):
            return "must be HH:MM"
        if int(v[:2]) > 23 or int(v[3:]) > 59:
            return "must be a time of day 00:00-23:59"
        return None
    return None


def _alt(s, v, path, key):
    # reasons of each alternative, or None when the combinator holds
    alts = s[key]
    reasons = []
    hits = 0
    for a in alts:
        e = _check(a, v, path)
        if e is None:
            hits += 1
            if key == "anyOf":
                return None
        else:
            reasons.append(e)
    if key == "oneOf" and hits == 1:
        return None
    if "x-error" in s:
        return "%s: %s" % (path, s["x-error"])
    if hits > 1:
        return "%s: matches more than one alternative" % path
    return "%s: none of the alternatives fit (%s)" % (path, "; ".join(reasons))


class SchemaFile:
    """The schema table kept in a text file, one `id<TAB>json` line each, and
    read on demand: the board holds only an index and the schemas it meets,
    not the text of every schema (about 25 KB of RAM when not frozen)."""

    def __init__(self, name):
        self.name = name
        self.path = None
        self._index = None

    def _find(self):
        here = __file__.rsplit("/", 1)[0] + "/" if "/" in __file__ else ""
        # beside the module first (host, or a board with uploaded .py), then the board's /assets
        for d in (here + "../assets/", here, "/assets/", "assets/", "firmware/assets/"):
            try:
                open(d + self.name, "rb").close()
                return d + self.name
            except OSError:
                pass
        raise ProtoError("the protocol schema file %s is missing (upload firmware/assets)" % self.name)

    def _load(self):
        if self._index is None:
            self.path = self._find()
            index = {}
            pos = 0
            with open(self.path, "rb") as f:
                for line in f:
                    index[line[:line.find(b"\t")].decode()] = pos
                    pos += len(line)
            self._index = index
        return self._index

    def __contains__(self, schema_id):
        return schema_id in self._load()

    def __iter__(self):
        return iter(self._load())

    def get(self, schema_id, default=None):
        return self[schema_id] if schema_id in self else default

    def __getitem__(self, schema_id):
        pos = self._load()[schema_id]
        with open(self.path, "rb") as f:
            f.seek(pos)
            line = f.readline()
        return line[line.find(b"\t") + 1:].decode().rstrip("\n")


# Parsed schemas by id. The type is a comment: the same text runs on MicroPython.
_CACHE = {}  # type: dict[str, dict]


def schema(schema_id):
    """The checks of one schema as a dict. The table holds JSON text, parsed
    on first use, so the board pays RAM only for the schemas it meets."""
    s = _CACHE.get(schema_id)
    if s is None:
        s = _CACHE[schema_id] = json.loads(SCHEMAS[schema_id])
    return s


def _check(s, v, path):
    """The reason v does not fit schema s, or None."""
    r = s.get("$ref")
    if r is not None:
        e = _check(schema(r), v, path)
        if e is not None:
            return e
    t = s.get("type")
    if t is not None:
        ts = t if isinstance(t, list) else (t,)
        ok = False
        for x in ts:
            if _type_ok(x, v):
                ok = True
                break
        if not ok:
            return "%s: expected %s, got %s" % (path, " or ".join(ts), _tname(v))
    if "const" in s and not _same(s["const"], v):
        return "%s: must be %s, got %s" % (path, _show(s["const"]), _show(v))
    if "enum" in s:
        for x in s["enum"]:
            if _same(x, v):
                break
        else:
            return "%s: %s is not one of %s" % (path, _show(v), "|".join([str(x) for x in s["enum"]]))
    if isinstance(v, str):
        n = s.get("minLength")
        if n is not None and len(v) < n:
            return "%s: must be at least %d characters" % (path, n) if n > 1 else "%s: must not be empty" % path
        n = s.get("maxLength")
        if n is not None and len(v) > n:
            return "%s: longer than %d characters" % (path, n)
        f = s.get("format")
        if f is not None:
            e = _format_error(f, v)
            if e is not None:
                return "%s: %s" % (path, e)
    elif isinstance(v, (int, float)) and not _isbool(v):
        if isinstance(v, float) and v - v != 0:
            # NaN and Infinity (Python's json reads both): no minimum or
            # maximum catches them, and a NaN level would win any comparison.
            return "%s: must be a finite number, got %s" % (path, v)
        n = s.get("minimum")
        if n is not None and v < n:
            return "%s: must be >= %s, got %s" % (path, n, v)
        n = s.get("maximum")
        if n is not None and v > n:
            return "%s: must be <= %s, got %s" % (path, n, v)
    elif isinstance(v, list):
        n = s.get("minItems")
        if n is not None and len(v) < n:
            return "%s: needs at least %d items" % (path, n)
        n = s.get("maxItems")
        if n is not None and len(v) > n:
            return "%s: more than %d items" % (path, n)
        if s.get("uniqueItems"):
            for i in range(len(v)):
                for j in range(i):
                    if _same(v[i], v[j]):
                        return "%s: item %s is repeated" % (path, _show(v[i]))
        it = s.get("items")
        if it is not None:
            for i in range(len(v)):
                e = _check(it, v[i], "%s[%d]" % (path, i))
                if e is not None:
                    return e
    elif isinstance(v, dict):
        for k in s.get("required", ()):
            if k not in v:
                return "%s: missing required field '%s'" % (path, k)
        props = s.get("properties", {})
        extra = s.get("additionalProperties", True)
        for k in v:
            p = props.get(k)
            if p is not None:
                e = _check(p, v[k], path + "." + k)
                if e is not None:
                    return e
            elif extra is False:
                return "%s: unexpected field '%s'" % (path, k)
            elif extra is not True:
                e = _check(extra, v[k], path + "." + k)
                if e is not None:
                    return e
    for a in s.get("allOf", ()):
        e = _check(a, v, path)
        if e is not None:
            return e
    for key in ("anyOf", "oneOf"):
        if key in s:
            e = _alt(s, v, path, key)
            if e is not None:
                return e
    if "not" in s and _check(s["not"], v, path) is None:
        return "%s: %s" % (path, s.get("x-error", "is not allowed in this form"))
    if "if" in s:
        branch = s.get("then") if _check(s["if"], v, path) is None else s.get("else")
        if branch is not None:
            e = _check(branch, v, path)
            if e is not None:
                return e
    return None


def validate(schema_id, obj, path=None):
    """The reason obj does not fit the named schema, or None if it fits."""
    if schema_id not in SCHEMAS:
        raise KeyError("no schema " + schema_id)
    return _check(schema(schema_id), obj, path or _NAMES.get(schema_id, schema_id))


def check(schema_id, obj, path=None):
    """obj itself when it fits the named schema; else raise ProtoError."""
    e = validate(schema_id, obj, path)
    if e is not None:
        raise ProtoError(e)
    return obj


def validate_against(schema, obj, path="value"):
    """Validate with a schema given as a dict (e.g. a task's params schema)."""
    return _check(schema, obj, path)


def unsupported_keywords(schema):
    """Keywords in schema (recursively) that this validator does not check."""
    bad = []
    _walk_keywords(schema, bad)
    return bad


def _walk_keywords(s, bad):
    if not isinstance(s, dict):
        return
    for k in s:
        if k not in KEYWORDS and not k.startswith("x-"):
            bad.append(k)
    for k in ("items", "not", "if", "then", "else", "additionalProperties"):
        if isinstance(s.get(k), dict):
            _walk_keywords(s[k], bad)
    for k in ("allOf", "anyOf", "oneOf"):
        for a in s.get(k, ()):
            _walk_keywords(a, bad)
    for p in s.get("properties", {}).values():
        _walk_keywords(p, bad)


# ---- JSON text ----

try:
    json.dumps({}, separators=(",", ":"))
    _SEP = True
except TypeError:  # older MicroPython
    _SEP = False


def encode(msg):
    """Compact JSON text of a message (UTF-8 kept as is)."""
    if _SEP:
        try:
            return json.dumps(msg, separators=(",", ":"), ensure_ascii=False)
        except TypeError:
            return json.dumps(msg, separators=(",", ":"))
    return json.dumps(msg)


# ---- server only ----
# The server refuses JSON that parses but cannot be used (decode_json and
# check_json): nested deeper than MAX_JSON_DEPTH, or holding a lone
# surrogate. The board trusts its server and has no heap to spare (on the
# unix port's 256 KB, one more module constant was enough to fail its boot).
MAX_JSON_DEPTH = 32

def _lone_surrogate(s):
    # A high surrogate not followed by a low one, or a low one alone. CPython's
    # json joins escaped pairs into one character; MicroPython keeps both halves.
    high = False
    for c in s:
        low = "\udc00" <= c <= "\udfff"
        if high or low:
            if not (high and low):
                return True
            high = False
            continue
        high = "\ud800" <= c <= "\udbff"
    return high


def json_error(obj, where="message"):
    """Why a parsed JSON value must be refused, or None: nested deeper than
    MAX_JSON_DEPTH, or a string holding a lone surrogate (a \\ud800 escape
    that is not half of a pair: no UTF-8 text can carry it, so it breaks
    whatever encodes it later: a send, a log line, a database)."""
    stack = [(obj, 1, where)]
    while stack:
        v, depth, path = stack.pop()
        if isinstance(v, dict):
            if depth > MAX_JSON_DEPTH:
                return "%s: nested deeper than %d levels" % (where, MAX_JSON_DEPTH)
            for k in v:
                if _lone_surrogate(k):
                    return "%s: a key holds a lone surrogate (\\ud800-\\udfff), which is not valid Unicode" % path
                stack.append((v[k], depth + 1, path + "." + k))
        elif isinstance(v, list):
            if depth > MAX_JSON_DEPTH:
                return "%s: nested deeper than %d levels" % (where, MAX_JSON_DEPTH)
            for i in range(len(v)):
                stack.append((v[i], depth + 1, "%s[%d]" % (path, i)))
        elif isinstance(v, str) and _lone_surrogate(v):
            return "%s holds a lone surrogate (\\ud800-\\udfff), which is not valid Unicode" % path
    return None


def check_json(obj, where="message"):
    """obj itself when json_error finds nothing; else raise ProtoError."""
    e = json_error(obj, where)
    if e is not None:
        raise ProtoError(e)
    return obj
# ---- end server only ----


def decode_json(text, limit=0):
    """Parse JSON text into an object (dict); ProtoError with a reason if not."""
    limit = limit or MAX_TEXT_MESSAGE
    if len(text) > limit:
        raise ProtoError("message of %d bytes is over the %d byte limit" % (len(text), limit))
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise ProtoError("not valid JSON (%s)" % (e,))
    # ---- server only ----
    except RecursionError:  # thousands of levels
        raise ProtoError("message: nested deeper than %d levels" % MAX_JSON_DEPTH)
    # ---- end server only ----
    if not isinstance(obj, dict):
        raise ProtoError("expected a JSON object, got %s" % _tname(obj))
    # ---- server only ----
    # Only text that could hold a problem is walked: a surrogate needs a \\ud
    # escape, and depth needs brackets.
    if "\\ud" in text or "\\uD" in text or text.count("[") + text.count("{") > MAX_JSON_DEPTH:
        check_json(obj)
    # ---- end server only ----
    return obj


def decode_ws(text, direction):
    """Parse and validate one WebSocket text message.

    direction is UP (device to server) or DOWN (server to device). Raises
    ProtoError; its .unknown is True for a well-formed message of a type this
    side does not know, which peers ignore."""
    msg = decode_json(text)
    t = msg.get("type")
    if not isinstance(t, str):
        raise ProtoError("message has no string field 'type'")
    sid = WS_SCHEMAS.get(t + ":" + direction) or WS_SCHEMAS.get(t + ":both")
    if sid is None:
        raise ProtoError("unknown message type %s" % _show(t), True)
    e = _check(schema(sid), msg, t)
    if e is not None:
        raise ProtoError(e)
    return msg


# ---- JSON-RPC 2.0 inside the mcp envelope ----

def device_tools():
    """The device's MCP tool declarations (parsed from DEVICE_TOOLS_JSON, which
    the device's tools/list pages by byte size without re-serialising)."""
    return [json.loads(t) for t in DEVICE_TOOLS_JSON]


def rpc_request(id, method, params=None):
    m = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        m["params"] = params
    return m


def rpc_notification(method, params=None):
    m = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        m["params"] = params
    return m


def rpc_result(id, result):
    return {"jsonrpc": "2.0", "id": id, "result": result}


def rpc_error(id, code, message, data=None):
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": err}


def check_rpc(payload):
    """Validate a JSON-RPC message, and a request's params for known methods."""
    check("jsonrpc.message", payload, "mcp.payload")
    method = payload.get("method")
    if method is not None:
        sid = RPC_PARAMS_SCHEMA.get(method)
        if sid is not None:
            check(sid, payload.get("params", {}), method + ".params")
    return payload


def tool_text(value):
    """A tool's return value as MCP text: true/false, decimal, JSON or the string."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    return encode(value)


def tool_result(value, is_error=False):
    return {"content": [{"type": "text", "text": tool_text(value)}], "isError": is_error}


def check_tool_args(name, args):
    """Validate a device tool's arguments; ProtoError if the tool is unknown
    (reason starts 'unknown tool') or the arguments do not fit."""
    sid = "tool:" + name
    if sid not in SCHEMAS:
        raise ProtoError("unknown tool %s" % _show(name), True)
    return check(sid, args if args is not None else {}, name)


# ---- binary audio frames ----

def header_size(version):
    if version == 1:
        return 0
    if version == 2:
        return BIN_V2_SIZE
    if version == 3:
        return BIN_V3_SIZE
    raise ProtoError("protocol version %s is not 1, 2 or 3" % (version,))


def pack_header_into(version, buf, ftype, timestamp, size):
    """Write a frame header at the start of buf; return its length.
    Lets the hot path reuse one buffer for every audio frame."""
    if size > BIN_MAX_PAYLOAD:
        raise ProtoError("payload of %d bytes is over %d" % (size, BIN_MAX_PAYLOAD))
    if version == 2:
        struct.pack_into(BIN_V2_FORMAT, buf, 0, 2, ftype, 0, timestamp & 0xFFFFFFFF, size)
        return BIN_V2_SIZE
    if version == 3:
        struct.pack_into(BIN_V3_FORMAT, buf, 0, ftype, 0, size)
        return BIN_V3_SIZE
    return header_size(version)


def pack_frame(version, payload, ftype=0, timestamp=0):
    """One binary WebSocket message holding payload."""
    n = header_size(version)
    out = bytearray(n + len(payload))
    pack_header_into(version, out, ftype, timestamp, len(payload))
    out[n:] = payload
    return bytes(out)


def unpack_frame(version, data):
    """(type, timestamp_ms, payload memoryview) of one binary message."""
    n = len(data)
    if version == 1:
        if n == 0:
            raise ProtoError("empty audio frame")
        return FRAME_OPUS, 0, memoryview(data)
    hs = header_size(version)
    if n < hs:
        raise ProtoError("frame too short for a v%d header (%d < %d bytes)" % (version, n, hs))
    if version == 2:
        ver, ftype, _res, ts, size = struct.unpack_from(BIN_V2_FORMAT, data, 0)
        if ver != 2:
            raise ProtoError("v2 frame header says version %d" % ver)
    else:
        ftype, _res, size = struct.unpack_from(BIN_V3_FORMAT, data, 0)
        ts = 0
    if ftype not in FRAME_TYPES:
        raise ProtoError("unknown frame type %d" % ftype)
    if size != n - hs:
        raise ProtoError("frame payload size %d does not match the %d bytes sent" % (size, n - hs))
    return ftype, ts, memoryview(data)[hs:]


# ---- MQTT ----

def topic(template, device_id):
    """A control-plane topic for one device, e.g. topic(TOPIC_RPT_ACK, id)."""
    return template.replace("{device_id}", device_id)


def decode_mqtt_request(data):
    """Parse and validate a control request (bytes or str); ProtoError if bad."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        if len(data) > MQTT_MAX_PAYLOAD:
            raise ProtoError("payload of %d bytes is over the %d byte limit" % (len(data), MQTT_MAX_PAYLOAD))
        try:
            data = bytes(data).decode()
        except Exception:
            raise ProtoError("payload is not UTF-8 text")
    return check("mqtt.envelope", decode_json(data, MQTT_MAX_PAYLOAD), "request")
