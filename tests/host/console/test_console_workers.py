"""The console against a server whose sessions live in two worker processes
(what `server.workers: auto` gives on a 2-core machine), in Chinese and in
English: the simulated board says its activation code aloud, the parent
approves it on the page; the board and a stock-protocol device (OTA +
WebSocket only, no broker) are both listed online, the stock one "voice
only" with the reason its controls are greyed; the board's lesson list is
read from its card through the worker holding it, and a lesson started
from the page plays. Screenshots at 390 px and 1280 px in both languages
when XIAOZHI_SCREENSHOTS names a folder (docs/console/)."""
import json
import shutil

import pytest
from selenium.webdriver.support.ui import Select

from testkit.console_browser import DEVICE_TOKEN, TOKEN, NoChromium, Page, chromium
from testkit.control_api import control_config
from testkit.firmware_process import FIXTURE_MP3
from testkit.server_thread import ServerThread
from testkit.sim_process import SimProcess
from testkit.wire_device import WireDevice

BOARD = "02:00:00:00:c0:2d"
STOCK = "02:00:00:00:5d:01"
WIDTHS = {"phone": (390, 844), "desk": (1280, 800)}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    cfg = control_config(tmp_path_factory.mktemp("console2") / "control.db", api_token=TOKEN,
                         auth={"tokens": [DEVICE_TOKEN]})
    cfg["server"]["workers"] = 2
    with ServerThread(cfg, with_broker=True) as srv:
        srv.base = "http://127.0.0.1:%d" % srv.server.http.port
        yield srv


@pytest.fixture(scope="module")
def board(server, tmp_path_factory):
    """The simulated board booted against the server with nothing but its OTA URL."""
    state = tmp_path_factory.mktemp("board2")
    (state / "sd").mkdir()
    for name in ("lesson1.mp3", "lesson2.mp3"):
        shutil.copy(FIXTURE_MP3, state / "sd" / name)
    sim = server.call(SimProcess.start, state, "--server", server.base + "/xiaozhi/ota/", "--device-id", BOARD)
    yield sim
    server.call(sim.close, True)


@pytest.fixture(scope="module")
def stock(server):
    """A stock device: its OTA check, then a WebSocket session with the shared device token; no broker."""
    async def start():
        import aiohttp
        async with aiohttp.ClientSession() as http:
            async with http.post(server.base + "/xiaozhi/ota/", json={"application": {"version": "1.6.2"}},
                                 headers={"Device-Id": STOCK, "Client-Id": "stock-client"}) as r:
                assert r.status == 200
        dev = WireDevice(server.ws_url, device_id=STOCK, token=DEVICE_TOKEN, mcp=False)
        await dev.connect()
        await dev.hello()
        return dev
    dev = server.call(start)
    yield dev
    server.call(dev.close)


def event(server, sim, name, **fields):
    return server.call(lambda: sim.wait_event(name, timeout=90, **fields), timeout=120)


def browser(lang, size):
    try:
        return chromium(*size, lang=lang)
    except NoChromium as e:
        pytest.fail(str(e))


def shoot(page, name):
    for w, h in WIDTHS.values():
        page.driver.set_window_size(w, h)
        page.screenshot("%s-%d" % (name, w))
    page.driver.set_window_size(*WIDTHS["desk"])


@pytest.fixture(scope="module")
def approved(server, board, stock):
    """In Chinese (the browser prefers it): the code the board said, typed on the page."""
    said = event(server, board, "activation")
    assert said["frames"] > 0
    driver = browser("zh-CN", WIDTHS["desk"])
    try:
        page = Page(driver, server.base)
        page.enter("devices")
        assert page.find("html").get_attribute("lang") == "zh-CN"
        shoot(page, "approve-zh")
        page.fill("#code", said["code"]).submit()
        assert BOARD in page.text("#approve-status", "已批准")
        event(server, board, "mqtt", action="CONNECT", ok=True)
        event(server, board, "state", state="listening")
        return True
    finally:
        driver.quit()


def listed_online(page, device_id, word):
    card = 'article[data-device="%s"]' % device_id
    page.wait(lambda d: word in page.find(card + " .badge").text, "%s %s" % (device_id, word))
    return page.find(card)


@pytest.mark.parametrize("lang,words", [
    ("zh-CN", {"online": "在线", "voice": "仅语音", "greyed": "只能语音对话", "done": "完成",
               "other": "English", "page": "设备"}),
    ("en-US", {"online": "Online", "voice": "Voice only", "greyed": "this device only talks",
               "done": "Done", "other": "中文", "page": "Devices"}),
])
def test_both_devices_online_and_a_lesson_from_the_card_plays(server, board, stock, approved, lang, words):
    driver = browser(lang, WIDTHS["desk"])
    suffix = lang[:2]
    try:
        page = Page(driver, server.base)
        page.enter("devices")
        assert page.find("#lang-switch").text == words["other"]
        assert page.find('nav a[data-page="devices"]').text == words["page"]
        board_card = listed_online(page, BOARD, words["online"])
        stock_card = listed_online(page, STOCK, words["online"])
        assert words["voice"] in stock_card.text and words["greyed"] in stock_card.text
        assert words["voice"] not in board_card.text
        shoot(page, "devices-" + suffix)

        # The board's lesson list comes from its card, through the worker holding it.
        page.go("now")
        Select(page.find("#device-picker")).select_by_value(BOARD)
        page.visible("#page-now[data-ready]")
        lesson = page.find("#now-lesson")
        assert lesson.tag_name == "select", "the card's list, read through the worker"
        assert [o.text for o in Select(lesson).options] == ["lesson1.mp3", "lesson2.mp3"]
        Select(lesson).select_by_value("lesson2.mp3")
        mark = board.mark()
        page.find("#start-lesson").click()
        page.text("#now-result", words["done"])
        playing = event(server, board, "player", since=mark, state="playing")
        assert playing["name"] == "lesson2.mp3"
        shoot(page, "now-" + suffix)

        # The stock device: its start buttons greyed, and the page says why.
        Select(page.find("#device-picker")).select_by_value(STOCK)
        page.visible("#page-now[data-ready]")
        assert not page.find("#start-chat").is_enabled()
        assert words["greyed"] in page.find("#now-greyed").text

        # The switch turns the page to the other language, and stays.
        page.find("#lang-switch").click()
        page.wait(lambda d: page.find("#lang-switch").text != words["other"], "the other language")
        assert not page.script_errors()
    finally:
        driver.quit()
