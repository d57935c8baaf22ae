"""Every page of the console opens for a device and says plainly what this
server cannot do instead of breaking, without a script error, and fits a
phone's screen (no sideways scrolling)."""
import urllib.request

import pytest

from conftest import TOKEN

DEVICE = "02:00:00:00:c0:0f"
PAGES = ("devices", "now", "schedules", "limits", "activity", "memory")
TITLES = {"devices": "Devices", "now": "Now", "schedules": "Schedules", "limits": "Limits",
          "activity": "What the child did", "memory": "Memory"}


@pytest.fixture(scope="module")
def known_device(page, console_server):
    """A device the parent provisioned (the server knows it), on the page's list."""
    req = urllib.request.Request(console_server.base + "/api/devices/%s/credentials" % DEVICE, data=b"{}",
                                 method="POST", headers={"Authorization": "Bearer " + TOKEN})
    urllib.request.urlopen(req).close()
    page.enter("devices")
    if page.driver.find_elements("css selector", "#add-device-id"):     # a server with no device list
        page.fill("#add-device-id", DEVICE).submit()
    page.visible('article[data-device="%s"]' % DEVICE)
    return DEVICE


@pytest.mark.parametrize("width", [1100, 390])
def test_every_page_opens_and_fits_the_screen(page, known_device, width):
    page.driver.set_window_size(width, 900)
    try:
        page.enter("devices")
        page.script_errors()
        for name in PAGES:
            here = page.go(name)
            assert here.find_element("css selector", "h1").text == TITLES[name]
            assert not page.driver.find_elements("css selector", "#page-error"), here.text
            if name != "devices":
                assert known_device in page.find("#device-picker").text
            overflow = page.driver.execute_script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, "%s is %d px wider than a %d px screen" % (name, overflow, width)
            if width < 500:
                page.screenshot("phone-" + name)
        assert page.script_errors() == []
    finally:
        page.driver.set_window_size(1100, 1000)


def test_a_route_this_server_lacks_is_told_apart_from_a_missing_thing(page, known_device):
    # What the pages rely on to say "not available on this server": the
    # router's bare 404 for a route it lacks, while the API's own 404 (JSON,
    # not_found) is an answer to show as it is.
    page.enter("devices")
    said = page.driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        import("/console/api.js").then(async ({api}) => {
          const out = [];
          for (const path of ["/api/no-such-feature", "/api/devices/02:00:00:00:c0:0f/schedules/nosuch"]) {
            try { await api.get(path); out.push(null); }
            catch (e) { out.push([e.status, e.unavailable, e.message]); }
          }
          done(out);
        });""")
    assert said[0] == [404, True, "This is not available on this server."]
    assert said[1][:2] == [404, False] and "nosuch" in said[1][2]
