"""The console's sessions, the API's guards and the static files, without a
browser: a session ends when idle too long or when its token is no longer
the API's, memory stays bounded, a write a browser marks as cross-site is
refused even with the right bearer token, and nothing but the console's
own files is served under /console/."""
import json
import urllib.error
import urllib.request

from testkit.console_browser import TOKEN
from xiaozhi_server.api.console_sessions import ConsoleSessions


class Clock:
    now = 0.0

    def __call__(self):
        return self.now


def test_a_session_ends_when_idle_or_when_the_token_changes():
    clock = Clock()
    sessions = ConsoleSessions(idle_s=60, clock=clock)
    sid = sessions.open("t1")
    assert sid != "t1" and len(sid) >= 40
    clock.now = 59
    assert sessions.token(sid, ["t1"]) == "t1"      # used: idle time starts again
    clock.now = 118
    assert sessions.token(sid, ["t1"]) == "t1"
    clock.now = 179
    assert sessions.token(sid, ["t1"]) is None      # 61 s idle
    other = sessions.open("t1")
    assert sessions.token(other, ["t2"]) is None    # the API's token changed
    assert sessions.token(other, ["t1"]) is None    # and the session is gone for good
    assert sessions.token(None, ["t1"]) is None and sessions.token("", ["t1"]) is None


def test_sessions_are_bounded_oldest_first():
    sessions = ConsoleSessions(max_sessions=3)
    ids = [sessions.open("t") for _ in range(4)]
    assert sessions.token(ids[0], ["t"]) is None
    assert all(sessions.token(i, ["t"]) == "t" for i in ids[1:])


def _call(base, method, path, headers, body=None):
    req = urllib.request.Request(base + path, method=method, headers=headers,
                                 data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_a_write_from_another_site_is_refused_whatever_it_carries(console_server):
    bearer = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    for site in ("cross-site", "same-site"):
        status, body = _call(console_server.base, "POST", "/api/session", dict(bearer, **{"Sec-Fetch-Site": site}),
                             {"token": TOKEN})
        assert status == 403 and body["error"]["code"] == "forbidden", body
        status, body = _call(console_server.base, "POST", "/api/devices/02:00:00:00:c0:02/tasks",
                             dict(bearer, **{"Sec-Fetch-Site": site}), {"app_id": "chat"})
        assert status == 403, body
    # Reads stay open to a bearer token from anywhere; a bearer write from no browser is unchanged.
    assert _call(console_server.base, "GET", "/api/devices/02:00:00:00:c0:02",
                 dict(bearer, **{"Sec-Fetch-Site": "cross-site"}))[0] == 200
    assert _call(console_server.base, "POST", "/api/devices/02:00:00:00:c0:02/tasks", bearer, {"app_id": "chat"})[0] \
        == 202


def test_a_wrong_token_gets_no_cookie(console_server):
    status, body = _call(console_server.base, "POST", "/api/session", {"Content-Type": "application/json"},
                         {"token": "guess"})
    assert status == 401 and "token" in body["error"]["message"]
    status, body = _call(console_server.base, "POST", "/api/session", {"Content-Type": "application/json"},
                         {"token": 12})
    assert status == 400


def test_only_the_consoles_own_files_are_served(console_server):
    for path in ("/console/..%2Fapi%2Froutes.py", "/console/%2e%2e/server.py", "/console/pages/../../config.py",
                 "/console/app.py", "/console/.hidden.js", "/console/nope.js"):
        status, _ = _call(console_server.base, "GET", path, {})
        assert status == 404, path
    status, body = _call(console_server.base, "GET", "/console/pages/now.js", {})
    assert status == 200 and b"export async function render" in body
    req = urllib.request.Request(console_server.base + "/console")
    with urllib.request.urlopen(req) as r:      # followed to /console/
        assert r.url.endswith("/console/") and b"Parents' console</title>" in r.read()
