"""The control plane's commands of `xiaozhi-server`, spoken through the HTTP
API of a running server (so the server stays the one writer of the store):

    xiaozhi-server task start DEVICE_ID APP_ID [TASK_ID] [--params JSON] [--wait S]
    xiaozhi-server schedule add DEVICE_ID (--at ISO|UNIX | --time HH:MM [--days 1,2,3])
                                --app APP --task TASK [--params JSON] [--id ALARM_ID]
    xiaozhi-server schedule list DEVICE_ID
    xiaozhi-server schedule delete DEVICE_ID ALARM_ID
    xiaozhi-server device show DEVICE_ID
    xiaozhi-server device provision DEVICE_ID [--write-config FIRMWARE_CONFIG_JSON]
    xiaozhi-server device approve CODE
    xiaozhi-server device revoke DEVICE_ID
    xiaozhi-server device codes | device clear CODE
    xiaozhi-server node list | node drain [NODE_ID] [--wait S]    (cli_nodes.py)
    (`devices` works as well as `device`)

The server's address and API token come from --server/--token, else
$XIAOZHI_SERVER/$XIAOZHI_API_TOKEN, else the config the server reads
(var/server.yaml and its XIAOZHI_* overrides: server.http_port,
control.api_token), so a server on another port is found as it runs. A
file there that the server would refuse stops the command with what is
wrong with it, rather than a guess at the default server and no token.

Exit status: 0 done, 1 the server refused or is not running, 2 bad arguments.
"""
import datetime
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from . import cli_nodes
from ..broker.credentials import write_private

COMMANDS = ("task", "schedule", "device", "devices", "node")
DEFAULT_SERVER = "http://127.0.0.1:8003"


class CliError(Exception):
    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


def config_defaults(path=None):
    """(server URL, API token, problem) as the server's own config gives
    them; the built-in defaults when there is no file. problem: what is wrong
    with a file that is there but refused (a typo, bad YAML, a wrong type):
    the server would not start with it, and guessing the default server and
    no token would send the parent's command elsewhere or unauthenticated."""
    from .. import config as configmod
    try:
        cfg = configmod.load(path, write_default=False)
    except (configmod.ConfigError, OSError) as e:
        return DEFAULT_SERVER, None, str(e)
    host = cfg["server"]["host"]
    if not host or host in ("0.0.0.0", "::", "[::]"):
        host = "127.0.0.1"      # a wildcard bind answers on loopback too
    elif ":" in host and not host.startswith("["):
        host = "[%s]" % host
    scheme = "https" if (cfg.get("tls") or {}).get("cert") else "http"
    return "%s://%s:%d" % (scheme, host, int(cfg["server"]["http_port"])), \
        (cfg.get("control") or {}).get("api_token") or None, None


def add_parsers(sub):
    server, token, problem = config_defaults()

    def common(p):
        # None: not given, so the config file's (or, with the file refused, an error at run).
        p.add_argument("--server", default=os.environ.get("XIAOZHI_SERVER"),
                       help="the running server's HTTP address (default %s: var/server.yaml's)" % server)
        p.add_argument("--token", default=os.environ.get("XIAOZHI_API_TOKEN"),
                       help="API token (default $XIAOZHI_API_TOKEN, else control.api_token)")
        p.set_defaults(config_server=server, config_token=token, config_problem=problem)

    t = sub.add_parser("task", help="start a task on a device now").add_subparsers(dest="action", required=True)
    p = t.add_parser("start", help="send START_APP_TASK")
    p.add_argument("device_id")
    p.add_argument("app_id")
    p.add_argument("task_id", nargs="?")
    p.add_argument("--params", help="task params as a JSON object")
    p.add_argument("--wait", type=float, default=5.0, help="seconds to wait for the device's ack (0 = don't)")
    common(p)

    s = sub.add_parser("schedule", help="a device's alarms").add_subparsers(dest="action", required=True)
    p = s.add_parser("add", help="store a schedule and send SET_ALARM")
    p.add_argument("device_id")
    when = p.add_mutually_exclusive_group(required=True)
    when.add_argument("--at", help="one shot: ISO time (local if no offset) or unix seconds")
    when.add_argument("--time", help="repeating: HH:MM device-local")
    p.add_argument("--days", help="with --time: 1=Monday..7=Sunday, comma separated (default every day)")
    p.add_argument("--app", required=True)
    p.add_argument("--task", required=True)
    p.add_argument("--params", help="task params as a JSON object")
    p.add_argument("--id", dest="alarm_id", help="alarm id (default: one is made up)")
    p.add_argument("--wait", type=float, default=5.0, help="seconds to wait for the device's ack")
    common(p)
    for name, text in (("list", "the device's schedules"), ("delete", "delete one and send UNSET_ALARM")):
        p = s.add_parser(name, help=text)
        p.add_argument("device_id")
        if name == "delete":
            p.add_argument("alarm_id")
            p.add_argument("--wait", type=float, default=5.0, help="seconds to wait for the device's ack")
        common(p)

    cli_nodes.add_parsers(sub, common)

    d = sub.add_parser("device", aliases=["devices"], help="what the server knows of a device, its credentials"
                       ).add_subparsers(dest="action", required=True)
    p = d.add_parser("show", help="last state report, recent requests and acks, schedules")
    p.add_argument("device_id")
    common(p)
    p = d.add_parser("provision", help="give a device its MQTT credentials and WebSocket token")
    p.add_argument("device_id")
    p.add_argument("--write-config", metavar="CONFIG_JSON",
                   help="also write them into this firmware config.json (e.g. var/sim/config.json)")
    common(p)
    p = d.add_parser("approve", help="approve the activation code a device shows (binds it, hands it its credentials)")
    p.add_argument("code")
    common(p)
    p = d.add_parser("revoke", help="delete a device's broker login (the others keep theirs) and forget it")
    p.add_argument("device_id")
    common(p)
    p = d.add_parser("codes", help="the activation codes waiting for a parent")
    common(p)
    p = d.add_parser("clear", help="clear a waiting activation code nobody recognises")
    p.add_argument("code")
    common(p)


# ---- talking to the server ----

def call(args, method, path, body=None, query=None):
    """(status, decoded JSON) of one API call; CliError when there is no answer."""
    url = args.server.rstrip("/") + path
    if query:
        url += "?" + urllib.parse.urlencode(query)
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if args.token:
        req.add_header("Authorization", "Bearer " + args.token)
    try:
        with urllib.request.urlopen(req, timeout=40) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        try:
            answer = json.loads(e.read() or b"null")
        except ValueError:
            answer = None
        return e.code, answer
    except (urllib.error.URLError, OSError) as e:
        raise CliError("no server at %s (%s): start it with `make run`" % (args.server, getattr(e, "reason", e)))


def _ok(status, answer):
    if status >= 400:
        err = (answer or {}).get("error") or {}
        raise CliError("%s (HTTP %d)" % (err.get("message") or "the server said no", status))
    return answer


def _dev(device_id):
    return "/api/devices/" + urllib.parse.quote(device_id, safe="")


def _params(text):
    if text is None:
        return None
    try:
        p = json.loads(text)
    except ValueError as e:
        raise CliError("--params is not JSON: %s" % e, 2)
    if not isinstance(p, dict):
        raise CliError("--params must be a JSON object", 2)
    return p


def parse_at(text):
    """Unix seconds of '1767225600' or an ISO time ('2026-01-01T07:30', local unless it has an offset)."""
    if text.isdigit():
        return int(text)
    try:
        dt = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise CliError("--at must be unix seconds or an ISO time like 2026-01-01T07:30", 2)
    return int(dt.timestamp())


def parse_days(text):
    try:
        return [int(d) for d in text.split(",") if d.strip()]
    except ValueError:
        raise CliError("--days must be numbers 1-7 separated by commas (1 = Monday)", 2)


# ---- printing ----

def _when(s):
    if "at" in s:
        return "once at %s" % time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s["at"]))
    days = s.get("days")
    return "every %s at %s" % ("day" if not days else "day %s" % ",".join(str(d) for d in days), s["time"])


def _ack(ack):
    if not ack:
        return "no ack yet"
    text = "%s: %s" % (ack["code"], ack["message"])
    return text + (" (%s)" % ack["reason"] if ack.get("reason") else "")


def _schedule_line(s):
    pt = s["pending_task"]
    params = " " + json.dumps(pt["params"], ensure_ascii=False) if pt.get("params") else ""
    return "%-16s %-12s %s.%s%s, %s; device: %s" % (s["alarm_id"], s["state"], pt["app_id"], pt["task_id"],
                                                   params, _when(s), _ack(s.get("last_ack")))


# ---- commands ----

def _task_start(args):
    body = {"app_id": args.app_id, "params": _params(args.params)}
    if args.task_id:
        body["task_id"] = args.task_id
    q = {"wait": args.wait} if args.wait else None
    sent = _ok(*call(args, "POST", _dev(args.device_id) + "/tasks", body, q))
    p = sent["payload"]
    print("sent START_APP_TASK %s.%s to %s (req_id %s)" % (p["app_id"], p["task_id"], args.device_id, sent["req_id"]))
    ack = sent.get("ack")
    print("device: %s" % (_ack(ack) if ack or not args.wait else "no ack within %g s" % args.wait))
    return 0 if ack is None or ack["ok"] else 1


def _schedule_add(args):
    body = {"pending_task": {"app_id": args.app, "task_id": args.task}}
    if _params(args.params) is not None:
        body["pending_task"]["params"] = _params(args.params)
    if args.at:
        if args.days:
            raise CliError("--days goes with --time, not with a one-shot --at", 2)
        body["at"] = parse_at(args.at)
    else:
        body["time"] = args.time
        if args.days:
            body["days"] = parse_days(args.days)
    if args.alarm_id:
        body["alarm_id"] = args.alarm_id
    status, answer = call(args, "POST", _dev(args.device_id) + "/schedules", body, {"wait": args.wait} if args.wait else None)
    if status == 503 and answer and answer.get("schedule"):
        print("stored, not sent yet: " + _schedule_line(answer["schedule"]))
    s = _ok(status, answer)
    print("added " + _schedule_line(s))
    return 1 if s["state"] == "failed" else 0


def _schedule_list(args):
    answer = _ok(*call(args, "GET", _dev(args.device_id) + "/schedules"))
    if not answer["schedules"]:
        print("no schedules on %s" % args.device_id)
    for s in answer["schedules"]:
        print(_schedule_line(s))
    return 0


def _schedule_delete(args):
    path = _dev(args.device_id) + "/schedules/" + urllib.parse.quote(args.alarm_id, safe="")
    s = _ok(*call(args, "DELETE", path, query={"wait": args.wait} if args.wait else None))
    print("deleted %s on %s; device: %s" % (s["alarm_id"], args.device_id, _ack(s.get("last_ack"))))
    return 0


def _device_show(args):
    d = _ok(*call(args, "GET", _dev(args.device_id)))
    print("device %s (broker %s)" % (d["device_id"], "connected" if d["broker_connected"] else "NOT connected"))
    st = d.get("state")
    if st:
        r = st["report"]
        task = "%s.%s" % (r.get("active_app_id"), r.get("active_task_id")) if r.get("active_app_id") else "-"
        print("  state   : %s, task %s (%s ago)" % (r["state"], task, _ago(st["received_at"])))
    else:
        print("  state   : never reported")
    print("  requests:")
    for q in d["recent_requests"] or []:
        print("    %s %-15s %s" % (q["req_id"], q["action"], _ack(q.get("ack"))))
    if not d["recent_requests"]:
        print("    none")
    print("  schedules:")
    for s in d["schedules"]:
        print("    " + _schedule_line(s))
    if not d["schedules"]:
        print("    none")
    return 0


def _device_provision(args):
    c = _ok(*call(args, "POST", _dev(args.device_id) + "/credentials"))
    m = c["mqtt"]
    print("device %s" % c["device_id"])
    print("  mqtt url : %s" % m["url"])
    print("  mqtt user: %s" % m["username"])
    print("  password : %s" % m["password"])
    print("  ws token : %s" % c["token"])
    if not c.get("broker_enforces"):
        print("  note     : the broker does not check this login: give the server its dynamic security admin "
              "(mqtt.admin_user, mqtt.admin_password; docs/api.md)")
    if args.write_config:
        _write_firmware_config(args.write_config, c)
        print("written into %s (mqtt.user, mqtt.password, token)" % args.write_config)
    return 0


def _write_firmware_config(path, c):
    """Merge the credentials into a firmware config.json, keeping its other keys."""
    cfg = {}
    if os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as f:
                cfg = json.load(f)
        except ValueError as e:
            raise CliError("%s is not JSON (%s): not changed" % (path, e))
        if not isinstance(cfg, dict):
            raise CliError("%s does not hold a JSON object: not changed" % path)
    mqtt = cfg.get("mqtt") if isinstance(cfg.get("mqtt"), dict) else {}
    mqtt.update(user=c["mqtt"]["username"], password=c["mqtt"]["password"])
    mqtt.setdefault("url", c["mqtt"]["url"])
    cfg.update(mqtt=mqtt, token=c["token"])
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_private(path, json.dumps(cfg, indent=1))


def _device_approve(args):
    a = _ok(*call(args, "POST", "/api/activations/" + urllib.parse.quote(args.code, safe="")))
    print("activated device %s (code %s): it gets its credentials at its next OTA check" % (a["device_id"], a["code"]))
    return 0


def _device_revoke(args):
    _ok(*call(args, "DELETE", _dev(args.device_id) + "/credentials"))
    print("revoked device %s: its broker login is gone" % args.device_id)
    return 0


def _device_codes(args):
    waiting = _ok(*call(args, "GET", "/api/activations"))["waiting"]
    for a in waiting:
        print("%s  %-20s asked %s ago, expires in %d s" % (a["code"], a["device_id"], _ago(a["since"]),
                                                           max(0, a["expires"] - time.time())))
    if not waiting:
        print("no activation code waits")
    return 0


def _device_clear(args):
    _ok(*call(args, "DELETE", "/api/activations/" + urllib.parse.quote(args.code, safe="")))
    print("cleared activation code %s" % args.code)
    return 0


def _ago(t):
    return "%d s" % max(0, time.time() - t)


_RUN = {("task", "start"): _task_start, ("schedule", "add"): _schedule_add, ("schedule", "list"): _schedule_list,
        ("schedule", "delete"): _schedule_delete, ("device", "show"): _device_show,
        ("device", "provision"): _device_provision, ("device", "approve"): _device_approve,
        ("device", "revoke"): _device_revoke, ("device", "codes"): _device_codes, ("device", "clear"): _device_clear,
        ("node", "list"): lambda a: cli_nodes.node_list(a, call, _ok),
        ("node", "drain"): lambda a: cli_nodes.node_drain(a, call, _ok)}


def _from_config(args):
    """--server and --token not given: the config file's, unless it is refused
    (exit 2, saying what is wrong with it)."""
    if args.server is not None and args.token is not None:
        return
    if args.config_problem:
        raise CliError("%s\n(fix the file, or give --server and --token)" % args.config_problem, 2)
    if args.server is None:
        args.server = args.config_server
    if args.token is None:
        args.token = args.config_token


def run(args):
    try:
        _from_config(args)
        return _RUN[("device" if args.cmd == "devices" else args.cmd, args.action)](args)
    except CliError as e:
        print("xiaozhi-server: %s" % e, file=sys.stderr)
        return e.status
