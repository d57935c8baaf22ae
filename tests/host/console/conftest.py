"""The parents' console in a real browser (testkit/console_browser.py)
against a real server in a background thread (testkit/server_thread.py)
with its control plane, its own authenticated mosquitto, an API token and
device tokens (so new devices get activation codes). One server and one
browser per test module: a browser start costs seconds on a busy machine.

The page is read as a parent reads it: what it shows, after waiting for it.
"""
import pytest

from testkit.console_browser import DEVICE_TOKEN, TOKEN, NoChromium, Page, chromium
from testkit.control_api import control_config
from testkit.server_thread import ServerThread


@pytest.fixture(scope="module")
def console_server(tmp_path_factory):
    cfg = control_config(tmp_path_factory.mktemp("console") / "control.db", api_token=TOKEN,
                         auth={"tokens": [DEVICE_TOKEN]})
    with ServerThread(cfg, with_broker=True) as srv:
        srv.base = "http://127.0.0.1:%d" % srv.server.http.port
        yield srv


@pytest.fixture(scope="module")
def browser():
    try:
        driver = chromium()
    except NoChromium as e:
        pytest.fail(str(e))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def page(browser, console_server):
    return Page(browser, console_server.base)
