"""Every page of the console opens for a device and says plainly what this
server cannot do instead of breaking, without a script error, and fits a
phone's screen (no sideways scrolling)."""
import json
import urllib.request

import pytest

from testkit.console_browser import TOKEN

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
            if width < 500 and name in ("devices", "now"):
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


def _has_route(page, path):
    status, body = page.fetch("GET", path)
    return not (status == 404 and (body is None or "error" not in body or not isinstance(body["error"], dict)))


def test_the_memory_page_shows_edits_and_erases_what_the_companion_keeps(page, known_device):
    page.enter("memory")
    if not _has_route(page, "/api/devices/%s/memory" % known_device):
        assert "Memory: not available on this server." in page.find("#page-memory").text
        pytest.skip("this server has no memory routes (they come with the family-safety branch)")
    if not page.find("#memory-on").is_selected():
        page.find("#memory-on").click()
    page.fill("#memory-name", "Mia")
    page.fill("#memory-age", "6")
    page.fill("#memory-interests", "dinosaurs\nthe moon")
    page.find("#save-memory").click()
    assert page.text("#memory-status", "Saved") == "Saved."
    page.enter("memory")
    assert page.find("#memory-name").get_attribute("value") == "Mia"
    assert page.find("#memory-interests").get_attribute("value") == "dinosaurs\nthe moon"
    page.screenshot("memory")
    page.find("#erase-memory").click()
    page.driver.switch_to.alert.accept()      # "Erase everything ...?"
    page.visible("#page-memory[data-ready]")
    page.wait(lambda d: page.find("#memory-name").get_attribute("value") == "", "the name erased")


def test_topics_to_avoid_and_transcripts_are_kept_as_set(page, known_device):
    if not _has_route(page, "/api/devices/%s/topics" % known_device):
        pytest.skip("this server has no topic routes (they come with the family-safety branch)")
    page.enter("limits")
    page.fill("#topics", "scary movies\nguns")
    page.fill("#redirect-line", "Let's talk about animals instead!")
    page.find("#save-topics").click()
    assert page.text("#topics-status", "Saved") == "Saved."
    page.enter("activity")
    if not page.find("#transcripts-on").is_selected():
        page.find("#transcripts-on").click()
    page.find("#privacy-form button[type=submit]").click()
    assert page.text("#privacy-status", "Saved") == "Saved."
    page.enter("limits")
    assert page.find("#topics").get_attribute("value") == "scary movies\nguns"
    page.enter("activity")
    assert page.find("#transcripts-on").is_selected()


def test_removing_a_device_forgets_it(page, known_device, console_server):
    page.enter("devices")
    card = page.visible('article[data-device="%s"]' % known_device)
    card.find_element("css selector", "button.danger").click()
    page.driver.switch_to.alert.accept()      # "Remove ...? It forgets its schedules ..."
    page.visible("#page-devices[data-ready]")
    page.wait(lambda d: not d.find_elements("css selector", 'article[data-device="%s"]' % known_device),
              "the device gone from the list")
    if page.driver.find_elements("css selector", "#add-device-id"):
        return      # a server with no device list: only this browser's list forgot it
    # The server forgot it too: its broker login no longer works.
    assert console_server.call(lambda: console_server.server.control.store.family.device_known(known_device)) is False


def test_a_waiting_code_is_listed_and_can_be_dismissed(page, console_server):
    # A device the server does not know asks the OTA endpoint, as a stock board does.
    req = urllib.request.Request(console_server.base + "/xiaozhi/ota/", data=b'{"application": {"version": "1.0.0"}}',
                                 method="POST", headers={"Device-Id": "02:00:00:00:c0:77", "Client-Id": "c0-77",
                                                         "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        code = json.loads(r.read())["activation"]["code"]
    page.enter("devices")
    if not _has_route(page, "/api/activations"):
        assert "not available on this server" in page.find("#page-devices").text
        pytest.skip("this server does not list waiting codes (that comes with the broker-trust branch)")
    item = page.visible("#waiting li")
    assert code in item.text and "02:00:00:00:c0:77" in item.text
    item.find_element("css selector", "button.quiet").click()     # Dismiss
    page.visible("#page-devices[data-ready]")
    page.wait(lambda d: code not in page.find("#page-devices").text, "the code gone")
