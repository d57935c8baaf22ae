"""The CLI as a person runs it (a separate process) against a running server."""
import asyncio
import json
import sys
import time

from testkit.mqtt_device import MqttDevice
from xiaozhi_server import protocol as proto


async def cli(api, *args):
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "xiaozhi_server", *args, "--server", api.base,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    return proc.returncode, out.decode(), err.decode()


async def test_task_start_prints_the_ack(api, device, device_id):
    rc, out, err = await cli(api, "task", "start", device_id, "english_learning", "repeater",
                             "--params", '{"name": "lesson1.mp3", "repeat": 2}')
    assert rc == 0, err
    assert "START_APP_TASK english_learning.repeater" in out and "accepted" in out
    _, request = await device.next_request()
    assert request["payload"]["params"] == {"name": "lesson1.mp3", "repeat": 2}
    assert request["payload"]["source"] == proto.SOURCE_MQTT_IMMEDIATE


async def test_validation_errors_name_the_field_and_fail(api, device, device_id):
    rc, out, err = await cli(api, "task", "start", device_id, "english_learning", "--params", '{"repeat": 2}')
    assert rc == 1 and "name" in err and "HTTP 400" in err
    rc, out, err = await cli(api, "task", "start", device_id, "chat", "--params", "{oops")
    assert rc == 2 and "--params is not JSON" in err
    assert await device.no_request(0.2)


async def test_schedule_add_list_delete_and_device_show(api, device, device_id):
    rc, out, err = await cli(api, "schedule", "add", device_id, "--time", "07:30", "--days", "1,2,3,4,5",
                             "--app", "english_learning", "--task", "repeater", "--params", '{"name": "lesson1.mp3"}',
                             "--id", "school_days")
    assert rc == 0, err
    assert "school_days" in out and "active" in out and "every day 1,2,3,4,5 at 07:30" in out
    at = time.strftime("%Y-%m-%dT%H:%M", time.localtime(time.time() + 7200))
    rc, out, err = await cli(api, "schedule", "add", device_id, "--at", at, "--app", "english_learning",
                             "--task", "repeater", "--params", '{"name": "story.mp3"}')
    assert rc == 0, err
    assert "once at" in out
    rc, out, err = await cli(api, "schedule", "list", device_id)
    assert rc == 0 and out.count("\n") == 2 and "school_days" in out and "story.mp3" in out
    rc, out, err = await cli(api, "schedule", "delete", device_id, "school_days")
    assert rc == 0 and "deleted school_days" in out and "accepted" in out
    actions = [(await device.next_request())[1]["action"] for _ in range(3)]
    assert actions == [proto.ACTION_SET_ALARM, proto.ACTION_SET_ALARM, proto.ACTION_UNSET_ALARM]
    rc, out, err = await cli(api, "device", "show", device_id)
    assert rc == 0 and "broker connected" in out and "UNSET_ALARM" in out and "story.mp3" in out
    assert "school_days" not in out.split("schedules:")[1]
    rc, out, err = await cli(api, "schedule", "delete", device_id, "school_days")
    assert rc == 1 and "already deleted" in err


async def test_schedule_add_refuses_days_with_at(api, device_id):
    rc, out, err = await cli(api, "schedule", "add", device_id, "--at", "2030-01-01T07:00", "--days", "1",
                             "--app", "chat", "--task", "conversation")
    assert rc == 2 and "--days goes with --time" in err


async def test_no_server_running_is_a_clear_error():
    rc, out, err = await cli(type("Api", (), {"base": "http://127.0.0.1:9"})(), "schedule", "list", "dev1")
    assert rc == 1 and "no server at http://127.0.0.1:9" in err


async def test_device_provision_writes_a_firmware_config_that_logs_in(api, tmp_path):
    cfg = tmp_path / "sim" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps({"mqtt": {"url": "mqtt://127.0.0.1:%d" % api.server.broker.port, "keepalive": 30},
                               "clock_speed": 2}))
    rc, out, err = await cli(api, "devices", "provision", "02:00:00:00:00:42", "--write-config", str(cfg))
    assert rc == 0, err
    assert "d.02%3A00%3A00%3A00%3A00%3A42" in out and "written into" in out
    written = json.loads(cfg.read_text())
    assert written["clock_speed"] == 2 and written["mqtt"]["keepalive"] == 30   # the rest is kept
    assert written["token"].startswith("xzd1.")
    # The broker takes the login at once; the device may use its own topics.
    async with MqttDevice(api.server.broker.port, "02:00:00:00:00:42", username=written["mqtt"]["user"],
                          password=written["mqtt"]["password"]) as dev:
        status, _ = await api.post("/api/devices/02:00:00:00:00:42/tasks",
                                   {"app_id": "chat"}, wait=5)
        assert status == 200
        assert (await dev.next_request())[1]["payload"]["app_id"] == "chat"


async def test_device_approve_of_an_unknown_code_fails(api):
    rc, out, err = await cli(api, "device", "approve", "123456")
    assert rc == 1 and "no activation code 123456 is waiting" in err


async def test_device_revoke_and_the_waiting_codes(api):
    await api.server.control.devices.provision("02:00:00:00:00:43")
    rc, out, err = await cli(api, "device", "revoke", "02:00:00:00:00:43")
    assert rc == 0 and "revoked device 02:00:00:00:00:43" in out, err
    rc, out, err = await cli(api, "device", "codes")
    assert rc == 0 and "no activation code waits" in out, err
    rc, out, err = await cli(api, "device", "clear", "123456")
    assert rc == 1 and "no activation code 123456 is waiting" in err


async def test_the_cli_finds_the_server_and_its_token_in_var_server_yaml(start_control, tmp_path):
    # The server runs on a port of its own with an API token; the parent runs
    # the CLI from the checkout with no --server, --token or environment.
    api = await start_control(api_token="family-parents-token-2026")
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "server.yaml").write_text(
        "server: {http_port: %d}\ncontrol: {api_token: family-parents-token-2026}\n" % api.server.http.port)
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in ("XIAOZHI_SERVER", "XIAOZHI_API_TOKEN", "XIAOZHI_HTTP_PORT")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "xiaozhi_server", "device", "codes", cwd=tmp_path, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()


async def test_a_refused_var_server_yaml_stops_the_cli_saying_what_is_wrong(tmp_path):
    # The parent's file has a typo: the server would not start with it, and
    # the CLI must not guess the default server and no token instead.
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "server.yaml").write_text("server: {http_port: 8013}\ncontrol: {api_tokn: x}\n")
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("XIAOZHI_SERVER", "XIAOZHI_API_TOKEN")}

    async def run(*args):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "xiaozhi_server", *args, cwd=tmp_path, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        return proc.returncode, err.decode()

    rc, err = await run("device", "codes")
    assert rc == 2, err
    assert "var/server.yaml: unknown setting control.api_tokn; did you mean control.api_token?" in err, err
    assert "no server at" not in err and "Traceback" not in err, err
    (tmp_path / "var" / "server.yaml").write_text("server: {http_port: eighty}\n")
    rc, err = await run("schedule", "list", "dev1")
    assert rc == 2 and "server.http_port: expected a whole number, got 'eighty'" in err, err
    # Given both, the file is not needed: the command goes to the server named.
    rc, err = await run("schedule", "list", "dev1", "--server", "http://127.0.0.1:9", "--token", "t")
    assert rc == 1 and "no server at http://127.0.0.1:9" in err, err
