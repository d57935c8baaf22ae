"""Names and dates a client should never send get a 400 (or 404) that says
why, never a 500 with a traceback in the log (issue 37, item 8), and a
device's name is printable text only: no NUL, no control characters, no
right-to-left override that makes the console show another name."""
import logging

import pytest

BAD_PATHS = ["/console/a%00b.js", "/console/" + "a" * 300 + ".js", "/console/%00",
             "/api/devices/%00/limits", "/api/devices/" + "d" * 300 + "/usage",
             "/api/devices/kid%00/transcripts"]


async def test_bad_names_and_dates_are_refused_without_a_traceback(api, caplog):
    caplog.set_level(logging.INFO)
    for path in BAD_PATHS:
        async with api.http.get(api.base + path) as r:
            assert r.status in (400, 404), (path, r.status, await r.text())
    async with api.http.post(api.base + "/api/activations/1%002") as r:
        assert r.status in (400, 404)
    # A day the calendar cannot end (the next day is past year 9999), and days that are not days.
    await api.call("PUT", "/api/devices/kid1/limits", {"timezone": "UTC"})
    for date in ("9999-12-31", "0001-01-01", "2024-02-30", "2024-1-1x", "\x00"):
        status, body = await api.get("/api/devices/kid1/transcripts", date=date)
        assert status in (200, 400), (date, status, body)
        if status == 400:
            assert "date" in body["error"]["message"]
    status, body = await api.get("/api/devices/kid1/transcripts", date="9999-12-31")
    assert status == 400, body
    assert (await api.get("/api/devices/kid1/transcripts", tz="Asia/Shang\x00hai"))[0] == 400
    assert "Traceback" not in caplog.text and "Error handling request" not in caplog.text, caplog.text


@pytest.mark.parametrize("name", ["Mia\x00", "Mia\u202egnp.exe", "\u2066Leo", "Zoe\x1b[31m", "line\nbreak",
                                  "tab\there", "zero\u200bwidth"])
async def test_a_device_name_must_be_printable(api, name):
    await api.post("/api/devices/kid1/credentials", {})
    status, body = await api.call("PATCH", "/api/devices/kid1", {"name": name})
    assert status == 400 and "name" in body["error"]["message"], body


async def test_printable_names_in_any_script_are_kept(api):
    await api.post("/api/devices/kid1/credentials", {})
    for name in ("小明的故事机", "Léa's box", "مريم", "👨‍👩‍👧 family"):
        status, body = await api.call("PATCH", "/api/devices/kid1", {"name": name})
        assert status == 200 and body["name"] == name, body
