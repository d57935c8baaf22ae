"""In the console a parent sees what each topic to avoid also blocks
(issue 37), changes one topic's words, and the server keeps exactly
that: their own list for that topic, the built-in one for the others."""
import json
import urllib.request

from testkit.console_browser import TOKEN

DEVICE = "02:00:00:00:c0:37"


def _topics(console_server):
    req = urllib.request.Request(console_server.base + "/api/devices/%s/topics" % DEVICE,
                                 headers={"Authorization": "Bearer " + TOKEN})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def test_a_parent_sees_and_edits_what_each_topic_also_blocks(page, console_server):
    req = urllib.request.Request(console_server.base + "/api/devices/%s/credentials" % DEVICE, data=b"{}",
                                 method="POST", headers={"Authorization": "Bearer " + TOKEN})
    urllib.request.urlopen(req).close()
    page.enter("devices")
    if page.driver.find_elements("css selector", "#add-device-id"):
        page.fill("#add-device-id", DEVICE).submit()
    page.visible('article[data-device="%s"]' % DEVICE)        # the one device: the pages show it
    page.enter("limits")
    page.fill("#topics", "ghosts\n打架")
    page.find("#save-topics").click()
    assert page.text("#topics-status", "Saved") == "Saved."
    lines = page.find("#topic-synonyms").get_attribute("value").split("\n")
    assert lines[0].startswith("ghosts: phantom, ") and lines[1].startswith("打架: 打斗, "), lines

    page.fill("#topic-synonyms", "ghosts: spectre, poltergeist\n" + lines[1])
    page.find("#save-topics").click()
    assert page.text("#topics-status", "Saved") == "Saved."
    saved = _topics(console_server)
    assert saved["synonyms"]["ghosts"] == ["spectre", "poltergeist"] and saved["synonyms_edited"] == ["ghosts"]
    page.enter("limits")
    assert page.find("#topic-synonyms").get_attribute("value").split("\n")[0] == "ghosts: spectre, poltergeist"
