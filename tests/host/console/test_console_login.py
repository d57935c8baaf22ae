"""Logging in to the console: the token typed into the page, a wrong one
refused; the session cookie the browser gets is not readable by script and
a cookie-authenticated write without the console's header is refused
(CSRF); logging out ends it."""
import urllib.request

from testkit.console_browser import TOKEN


def test_the_console_is_served_with_nothing_from_another_host(console_server):
    with urllib.request.urlopen(console_server.base + "/console/") as r:
        html = r.read().decode()
        policy = r.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "http://" not in html and "https://" not in html and "//" not in html.replace("<!--", "")
    with urllib.request.urlopen(console_server.base + "/console/app.js") as r:
        assert r.headers["Content-Type"].startswith("text/javascript")


def test_a_wrong_token_is_refused_and_the_right_one_opens_the_devices_page(page):
    page.driver.delete_all_cookies()
    page.login("not-the-token")
    assert "not the right token" in page.text("#login-status", "not the right token")
    assert page.find("#token").is_displayed() and not page.find("main").is_displayed()
    page.screenshot("login")

    page.login(TOKEN)
    page.visible("#page-devices[data-ready]")
    assert page.find("#approve-form").is_displayed()
    # The session id lives in an HttpOnly cookie: no script can read it.
    assert "xz_session" not in page.driver.execute_script("return document.cookie")
    cookie = page.driver.get_cookie("xz_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and TOKEN not in cookie["value"]


def test_a_cookie_write_without_the_console_header_is_refused(page):
    page.enter()
    task = {"app_id": "chat"}
    status, body = page.fetch("POST", "/api/devices/02:00:00:00:c0:01/tasks", task,
                              {"Content-Type": "application/json"})
    assert status == 403 and body["error"]["code"] == "forbidden", body
    assert "X-Xiaozhi-Console" in body["error"]["message"]
    # Reading needs no header; the same write with it gets past the guard
    # (to the device: 202, nothing answered yet).
    assert page.fetch("GET", "/api/devices/02:00:00:00:c0:01")[0] == 200
    status, body = page.fetch("POST", "/api/devices/02:00:00:00:c0:01/tasks", task,
                              {"Content-Type": "application/json", "X-Xiaozhi-Console": "1"})
    assert status == 202, body


def test_logging_out_ends_the_session(page):
    page.enter()
    stolen = page.driver.get_cookie("xz_session")["value"]
    page.find("#logout").click()
    assert "logged out" in page.text("#login-status", "logged out")
    assert page.fetch("GET", "/api/session")[0] == 401
    # The old id is dead on the server too, not only gone from the browser.
    req = urllib.request.Request(page.base + "/api/session", headers={"Cookie": "xz_session=" + stolen})
    try:
        urllib.request.urlopen(req)
        raise AssertionError("a logged-out session still works")
    except urllib.error.HTTPError as e:
        assert e.code == 401
