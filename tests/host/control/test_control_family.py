"""The family's routes over real HTTP (each back-end): devices listed and
named, limits set and refused with a 4xx naming what is wrong, usage by
local day, a removed device forgotten with its MQTT login; and, on a real
session with the scripted LLM and the server's clock moved, chat refused
with the kind line once the day's talk time is used and at bedtime, while
a parent's lesson still plays, and a chat turn and a lesson counted in
the day's usage."""
import datetime
import zoneinfo

import aiohttp

from testkit.control_api import Api, control_config, eventually
from testkit.mqtt_device import MqttDevice
from testkit.wire_device import WireDevice
from xiaozhi_server import protocol as proto
from xiaozhi_server.server import XiaozhiServer
from xiaozhi_server.text.lines import Lines

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
LINES = Lines.load()


def at(hhmm):
    h, m = map(int, hhmm.split(":"))
    return datetime.datetime(2026, 12, 4, h, m, tzinfo=SHANGHAI).timestamp()


async def raw(api, method, path, data):
    async with api.http.request(method, api.base + path, data=data,
                                headers={"Content-Type": "application/json"}) as r:
        return r.status, await r.json()


async def test_family_routes_and_their_errors(api, device_id):
    await api.post("/api/devices/%s/credentials" % device_id, {})
    status, body = await api.get("/api/devices")
    row = next(d for d in body["devices"] if d["device_id"] == device_id)
    assert status == 200 and row["name"] is None and row["online"] is False and row["last_seen"] is None

    path = "/api/devices/" + device_id
    status, row = await api.call("PATCH", path, {"name": "Mia's bear"})
    assert status == 200 and row["name"] == "Mia's bear"
    assert (await api.call("PATCH", path, {"nick": "x"}))[0] == 400
    status, err = await raw(api, "PATCH", path, '{"name": ')
    assert status == 400 and err["error"]["code"] == "invalid_request"
    status, err = await api.call("PATCH", "/api/devices/nobody", {"name": "x"})
    assert status == 404 and "nobody" in err["error"]["message"]

    status, limits = await api.get(path + "/limits")
    assert status == 200 and limits == {"timezone": "Asia/Shanghai", "bedtime": None, "daily_talk_minutes": None,
                                        "language": None}
    good = {"timezone": "Europe/Berlin", "bedtime": {"start": "20:30", "end": "07:00"}, "daily_talk_minutes": 30,
            "language": "en"}
    status, limits = await api.call("PUT", path + "/limits", good)
    assert status == 200 and limits == good
    for bad, field in (({"bedtime": {"start": "25:00", "end": "07:00"}}, "bedtime.start"),
                       ({"daily_talk_minutes": -1}, "daily_talk_minutes"),
                       ({"timezone": "Nowhere/City"}, "timezone"),
                       ({"language": "english"}, "language")):
        status, err = await api.call("PUT", path + "/limits", bad)
        assert status == 400 and err["error"]["message"].startswith(field), err
    status, err = await raw(api, "PUT", path + "/limits", "not json")
    assert status == 400
    assert (await api.get(path + "/limits"))[1] == good       # nothing changed by the refusals
    assert (await api.call("PUT", "/api/devices/nobody/limits", good))[0] == 404

    status, usage = await api.get(path + "/usage", days="3")
    assert status == 200 and len(usage["days"]) == 3 and usage["timezone"] == "Europe/Berlin"
    assert usage["days"][-1]["talk_seconds"] == 0 and usage["days"][-1]["lessons"] == []
    for days in ("0", "-2", "x", "1000"):
        assert (await api.get(path + "/usage", days=days))[0] == 400
    assert (await api.get("/api/devices/nobody/usage"))[0] == 404

    status, err = await api.get(path + "/lessons")
    assert status == 503 and err["error"]["code"] == "device_offline" and "voice connection" in err["error"]["message"]

    devices = api.server.control.devices
    creds, dyn = devices.creds, devices.broker.dynsec
    user = creds.mqtt_user(device_id)
    assert user in await dyn.users()
    async with api.http.delete(api.base + path) as r:
        assert r.status == 204
    assert user not in await dyn.users()          # its broker login is revoked
    assert not api.server.control.devices.token_valid(device_id, creds.device_token(device_id))
    assert (await api.get(path + "/limits"))[0] == 404
    assert device_id not in [d["device_id"] for d in (await api.get("/api/devices"))[1]["devices"]]
    assert (await api.delete(path))[0] == 404


def board():
    """A board's tools on the WebSocket: its card and its player."""
    listing = {"files": [{"name": "lesson001.mp3", "size": 482304}, {"name": "lesson002.mp3"}]}
    return {"self.mp3.play": lambda a: {"accepted": True, "status": "playing"},
            "self.mp3.stop": lambda a: {"stopped": True},
            "self.mp3.get_list": lambda a: listing,
            "self.mp3.get_status": lambda a: {"state": "playing", "repeat_left": 1}}


def said(dev, key, since=0.0):
    return any(t in LINES.choices(key, "zh") + LINES.choices(key, "en") for t in dev.texts(since=since))


async def test_bedtime_refuses_chat_not_the_parents_lesson_and_usage_counts(tmp_path, fake_llm):
    cfg = control_config(tmp_path / "control.db", apps={"opener_lines": {"zh": ["你好呀！"], "en": ["Hi!"]}})
    cfg["llm"] = {"type": "openai", "base_url": fake_llm.base_url, "api_key": "test", "model": "fake-model"}
    server = XiaozhiServer(cfg, with_broker=True, with_mcp=False)
    await server.start()
    now = [at("12:00")]
    server.control.family.clock = lambda: now[0]      # the server's one clock for limits and days
    device_id = "aa:bb:cc:00:00:42"
    try:
        async with aiohttp.ClientSession() as http, \
                await MqttDevice.provisioned(server, device_id) as mqtt_dev, \
                WireDevice(server.ws.url, device_id=device_id, tools=board()) as dev:
            api = Api(server, http)
            path = "/api/devices/" + device_id
            await api.call("PUT", path + "/limits", {"timezone": "Asia/Shanghai",
                                                     "bedtime": {"start": "20:30", "end": "07:00"}})
            await dev.hello()
            # Midday: a chat turn is answered, and counted.
            fake_llm.reply("Sure! Elephants are the biggest animals on land.")
            await dev.detect("tell me about elephants")
            await dev.wait_for(lambda: any("Elephants" in t for t in dev.texts()), timeout=20)
            await dev.wait_json("tts", state="stop", timeout=30)
            row = next(d for d in (await api.get("/api/devices"))[1]["devices"] if d["device_id"] == device_id)
            assert row["online"] and row["app"] == "chat"
            status, lessons = await api.get(path + "/lessons")
            assert status == 200 and [x["name"] for x in lessons["lessons"]] == ["lesson001.mp3", "lesson002.mp3"]

            async def talk_today():
                return (await api.get(path + "/usage", days="1"))[1]["days"][0]["talk_seconds"]
            assert await eventually(talk_today, timeout=10) >= 1

            # The day's talk time used up (0 minutes allowed): the other kind line.
            asked = len(fake_llm.requests)
            await api.call("PUT", path + "/limits", {"daily_talk_minutes": 0})
            mark = dev.json[-1][0]
            await dev.detect("and giraffes?")
            await dev.wait_for(lambda: said(dev, "limit_talk_time", mark), timeout=15)
            await api.call("PUT", path + "/limits", {"daily_talk_minutes": None})

            # Bedtime: words and the wake word get the kind line, and no chat.
            now[0] = at("21:15")
            mark = dev.json[-1][0]
            await dev.detect("one more story please")
            await dev.wait_for(lambda: said(dev, "limit_bedtime", mark), timeout=15)
            mark = dev.json[-1][0]
            await dev.detect("小智")
            await dev.wait_for(lambda: said(dev, "limit_bedtime", mark), timeout=15)
            assert len(fake_llm.requests) == asked

            # A parent's lesson at bedtime: sent over MQTT, started by the board, played.
            status, sent = await api.post(path + "/tasks", {"app_id": "english_learning", "task_id": "repeater",
                                                            "params": {"name": "lesson002.mp3", "repeat": 2}})
            assert status == 202
            _topic, req = await mqtt_dev.next_request()
            p = req["payload"]
            result = await dev.start_task(p["app_id"], p["task_id"], p["source"], p["params"])
            assert result["result"]["accepted"] is True
            await dev.wait_for(lambda: ("self.mp3.play", {"name": "lesson002.mp3", "repeat": 2}) in dev.tool_calls)
            # The board says it played to the end: counted with its passes.
            await mqtt_dev.publish_state(proto.mqtt_state(
                device_id, "idle", event="player_done", timestamp=int(now[0]),
                player={"state": "done", "name": "lesson002.mp3", "repeat_left": 0}))

            async def lessons_today():
                return (await api.get(path + "/usage", days="1"))[1]["days"][0]["lessons"]
            assert await eventually(lessons_today, timeout=10) == [{"name": "lesson002.mp3", "plays": 1, "passes": 2}]
    finally:
        await server.stop()
