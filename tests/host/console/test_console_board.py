"""A parent with a new board, on the console: the simulated board (the real
firmware on the host HAL, tools/sim.py) says its activation code, the
parent types it on the Devices page, and the board gets its login and
connects; on the Now page the parent plays a lesson and the page shows the
board's ack while the board's player plays it; on the Schedules page the
parent plans a lesson and the board sets its alarm; the day's usage shows
the lesson heard; a bedtime set on the Limits page makes the board say
its good-night line instead of chatting when the server's clock is moved
into it."""
import datetime
import json
import re
import shutil
import zoneinfo

import pytest
from selenium.webdriver.support.ui import Select

from testkit.control_api import eventually
from testkit.firmware_process import FIXTURE_MP3
from testkit.sim_process import SimProcess
from xiaozhi_server.text.lines import Lines

BOARD = "02:00:00:00:c0:de"


@pytest.fixture(scope="module")
def board(console_server, tmp_path_factory):
    """The simulated board, booted against the server: it waits with an
    activation code (nothing is provisioned for it)."""
    state = tmp_path_factory.mktemp("board")
    (state / "sd").mkdir()
    for name in ("lesson1.mp3", "lesson2.mp3"):
        shutil.copy(FIXTURE_MP3, state / "sd" / name)
    # The board knows its broker, not its login: activation gives it that.
    port = console_server.server.broker.port
    (state / "config.json").write_text(json.dumps({"mqtt": {"url": "mqtt://127.0.0.1:%d" % port,
                                                            "user": "not-activated", "password": ""}}))
    sim = console_server.call(SimProcess.start, state, "--server", console_server.base + "/xiaozhi/ota/",
                              "--device-id", BOARD)
    sim.state = state
    yield sim
    console_server.call(sim.close, True)


def board_event(server, sim, event, **fields):
    """The board's next console event that matches, waited for on the server's loop."""
    return server.call(lambda: sim.wait_event(event, timeout=60, **fields), timeout=90)


def activation_code(server, sim):
    """The code the board says aloud: its `activation` event, with the frames it played."""
    said = board_event(server, sim, "activation")
    assert said["frames"] > 0, "the board played no rendered words for its code"
    assert re.fullmatch(r"\d{6}", said["code"])
    return said["code"]


@pytest.fixture(scope="module")
def approved(page, console_server, board):
    """The parent types the code the board says: the page's answer."""
    code = activation_code(console_server, board)
    page.enter("devices")
    page.fill("#code", code).submit()
    answer = page.text("#approve-status", "Approved")
    board_event(console_server, board, "mqtt", action="CONNECT", ok=True)
    board_event(console_server, board, "state", state="listening")      # its voice connection is up
    return answer


def test_approving_the_code_the_board_says_lets_it_connect(page, approved):
    assert BOARD in approved
    # The page lists the board from now on, and shows it online once it reported.
    page.enter("devices")
    card = page.visible('article[data-device="%s"]' % BOARD)
    assert BOARD in card.text and "Online" in card.text
    # The parent names it; the list says the name from then on.
    name = card.find_element("css selector", "input[name=name]")
    name.clear()
    name.send_keys("Mia's bear")
    card.find_element("css selector", "form").submit()
    page.wait(lambda d: "Mia's bear" in page.find('article[data-device="%s"] h3' % BOARD).text, "the new name")
    page.screenshot("devices")


def test_playing_a_lesson_shows_the_boards_ack_and_the_board_plays_it(page, approved, console_server, board):
    page.enter("now")
    lesson = page.find("#now-lesson")
    if lesson.tag_name == "select":
        Select(lesson).select_by_value("lesson1.mp3")   # the card's real list
    else:
        page.fill("#now-lesson", "lesson1.mp3")
    page.fill("#now-repeat", "2")
    mark = board.mark()
    page.find("#start-lesson").click()
    assert "Done: the device started it" in page.text("#now-result", "Done")
    playing = board_event(console_server, board, "player", since=mark, state="playing")
    assert playing["name"] == "lesson1.mp3"
    assert "Play lesson1.mp3: Done: the device started it." in page.text("#recent", "Play lesson1.mp3")
    page.screenshot("now")
    board_event(console_server, board, "player", since=mark, state="done", name="lesson1.mp3")   # both passes


def test_a_lesson_gone_from_the_card_is_refused_in_plain_words(page, approved, board):
    page.enter("now")
    lessons = page.find("#now-lesson")
    assert lessons.tag_name == "select", "the page offers the card's real list"
    assert [o.text for o in Select(lessons).options] == ["lesson1.mp3", "lesson2.mp3"]
    (board.state / "sd" / "lesson2.mp3").unlink()     # the card changed since the page asked
    Select(lessons).select_by_value("lesson2.mp3")
    page.find("#start-lesson").click()
    assert "The device said no: that lesson is not on its card." in page.text("#now-result", "said no")


def test_a_repeating_lesson_planned_on_the_page_is_set_on_the_board(page, approved, console_server, board):
    page.enter("schedules")
    assert page.find("#device-timezone").text
    page.find("#kind-repeat").click()
    page.driver.execute_script("arguments[0].value = '07:30'", page.find("#sched-time"))
    for day in (6, 7):   # school days only
        page.find("#day-%d" % day).click()
    if page.find("#sched-lesson").tag_name == "select":
        Select(page.find("#sched-lesson")).select_by_value("lesson1.mp3")
    else:
        page.fill("#sched-lesson", "lesson1.mp3")
    mark = board.mark()
    page.find("#save-schedule").click()
    assert "set on the device" in page.text("#schedule-status", "Saved")
    alarm = board_event(console_server, board, "alarm", since=mark, what="set")
    row = page.visible('#schedules tr[data-alarm="%s"]' % alarm["alarm_id"])
    assert "Mon, Tue, Wed, Thu, Fri at 07:30" in row.text and "lesson1.mp3" in row.text
    assert "Set on the device" in row.text
    page.screenshot("schedules")


def test_the_days_usage_shows_the_lesson_heard(page, approved, console_server, board):
    # The lesson played from the Now page (twice) ended: the board reported it.
    plane = console_server.server.control

    async def counted():
        return await eventually(lambda: _lessons_today(plane), timeout=30)
    console_server.call(counted, timeout=60)
    page.enter("activity")
    today = datetime.datetime.now(zoneinfo.ZoneInfo("Asia/Shanghai")).date().isoformat()   # the default zone
    row = page.visible('#usage tr[data-date="%s"]' % today)
    assert "lesson1.mp3 (heard 2 times)" in row.find_element("css selector", ".lessons").text
    page.screenshot("activity")


def test_a_schedule_changed_to_once_then_deleted_follows_on_the_board(page, approved, console_server, board):
    page.enter("schedules")
    row = page.visible("#schedules tbody tr")
    alarm_id = row.get_attribute("data-alarm")
    row.find_element("css selector", "button.quiet").click()          # Edit
    page.visible("#kind-once").click()
    tomorrow = page.driver.execute_script("""
        const d = new Date(Date.now() + 86400000);
        const pad = (n) => String(n).padStart(2, "0");
        return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + "T07:00";""")
    page.driver.execute_script("arguments[0].value = arguments[1]", page.find("#sched-at"), tomorrow)
    at = page.driver.execute_script("return new Date(arguments[0]).getTime() / 1000", tomorrow)
    mark = board.mark()
    page.find("#save-schedule").click()
    assert "set on the device" in page.text("#schedule-status", "Saved")
    moved = board_event(console_server, board, "alarm", since=mark, what="set", alarm_id=alarm_id)
    assert moved["at"] == at
    page.text('#schedules tr[data-alarm="%s"]' % alarm_id, "Once, ")

    mark = board.mark()
    page.find('#schedules tr[data-alarm="%s"] button.danger' % alarm_id).click()
    page.driver.switch_to.alert.accept()      # "Delete this schedule?"
    page.visible("#no-schedules")
    board_event(console_server, board, "alarm", since=mark, what="cleared", alarm_id=alarm_id)


async def _lessons_today(plane):
    return (await plane.usage(BOARD, "1"))["days"][0]["lessons"]


def test_at_bedtime_the_board_says_good_night_instead_of_chatting(page, approved, console_server, board):
    page.enter("limits")
    if not page.find("#bedtime-on").is_selected():
        page.find("#bedtime-on").click()
    for field, hhmm in (("#bedtime-start", "20:30"), ("#bedtime-end", "07:00")):
        page.driver.execute_script("arguments[0].value = arguments[1]", page.find(field), hhmm)
    page.find("#save-limits").click()
    assert page.text("#limits-status", "Saved") == "Saved."
    page.screenshot("limits")

    family = console_server.server.control.family
    clock = family.clock
    shanghai = zoneinfo.ZoneInfo("Asia/Shanghai")
    tonight = datetime.datetime.now(shanghai).replace(hour=21, minute=15).timestamp()
    family.clock = lambda: tonight        # the server's clock for limits, moved into bedtime
    try:
        mark = board.mark()
        console_server.call(board.send, "wake")
        lines = Lines.load()
        night = set(lines.choices("limit_bedtime", "zh") + lines.choices("limit_bedtime", "en"))
        # The chat app may say its own invitation meanwhile: the wake word's answer is the good-night line.
        async def good_night():
            return await eventually(lambda: [e for e in board.events[mark:] if e["event"] == "subtitle"
                                             and e.get("text") in night], timeout=60)
        assert console_server.call(good_night, timeout=90)
    finally:
        family.clock = clock


def test_translation_started_and_stopped_from_the_page(page, approved, console_server, board):
    # Last: a chat the parent starts (Stop) runs as the parent's, and the
    # board then ignores its wake word (docs/console.md, Now).
    page.enter("now")
    mark = board.mark()
    page.find("#start-translation").click()
    assert "Done: the device started it" in page.text("#now-result", "Done")
    started = board_event(console_server, board, "task", since=mark, app_id="english_translation")
    assert started["outcome"] == "accepted"
    mark = board.mark()
    page.find("#stop").click()
    page.text("#recent", "Chat (or stop)")
    assert board_event(console_server, board, "task", since=mark, app_id="chat")["outcome"] == "accepted"
