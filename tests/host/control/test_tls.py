"""TLS on every channel (issue 27): a server with a certificate from a
throwaway CA made here speaks wss://, https:// and (its own mosquitto)
mqtts://, and hands those URLs out by OTA. The simulated board trusts only
that CA (config.json tls.ca_file): with the right certificate it runs a
turn over wss:// and takes a parents' command over mqtts://; a certificate
for another host name, a self-signed one and an expired one are refused on
both channels, with a log line naming the reason and the spoken
`server_untrusted` line, and nothing is tried in plain."""
import asyncio
import json
import logging
import ssl

import aiohttp
import pytest
import websockets

from testkit.control_api import control_config, eventually
from testkit.mosquitto import Mosquitto, free_port
from testkit.sim_process import SimProcess
from testkit.tls_ca import TestCA
from xiaozhi_server import config as configmod
from xiaozhi_server import protocol as proto
from xiaozhi_server.server import XiaozhiServer
from xiaozhi_server.transport import tls as server_tls

BOARD = "02:00:00:00:7e:01"


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return TestCA(tmp_path_factory.mktemp("ca"))


@pytest.fixture
async def tls_server(tmp_path):
    started = []

    async def start(cert):
        cfg = control_config(tmp_path / "control.db", tls={"cert": cert[0], "key": cert[1]},
                             apps={"opener_lines": {"zh": ["你好呀！"], "en": ["Hi there!"]}, "max_reinvites": 0})
        cfg["mqtt"]["tls_port"] = free_port()
        server = XiaozhiServer(cfg, with_broker=True, with_mcp=False)
        started.append(server)
        await server.start()
        return server

    yield start
    for server in started:
        await server.stop()


def client_context(ca):
    return ssl.create_default_context(cafile=ca.ca_pem)


def mqtts(server):
    return "mqtts://127.0.0.1:%d" % server.broker.tls["port"]


@pytest.mark.parametrize("interp", ["micropython", "cpython"])
async def test_the_board_runs_a_turn_over_wss_and_takes_a_command_over_mqtts(interp, ca, tls_server, tmp_path,
                                                                             caplog):
    caplog.set_level(logging.INFO, logger="xiaozhi_server.server")
    server = await tls_server(ca.good)
    listeners = [r.getMessage() for r in caplog.records if r.getMessage().startswith("listening:")]
    assert any("wss://127.0.0.1:%d" % server.ws.port in line and line.endswith("(TLS)") for line in listeners)
    assert any("https://127.0.0.1:%d" % server.http.port in line and "(TLS)" in line for line in listeners)
    assert any(mqtts(server) in line and "(TLS)" in line for line in listeners)
    assert any("mqtt://127.0.0.1:%d" % server.broker.port in line and "plain, loopback only" in line
               for line in listeners), listeners
    # A bundle of two CAs, ours second: the board reads every certificate of it.
    args = ["--server", server.http.ota_url, "--mqtt", mqtts(server), "--ca", ca.bundle_pem, "--device-id", BOARD]
    sim = await SimProcess.start(tmp_path / "state", *(["--micropython"] if interp == "micropython" else []), *args)
    try:
        # The turn: OTA over https:// named wss://, the server's opener is heard over it.
        await sim.wait_event("subtitle", role="assistant", timeout=60)
        await sim.wait_event("reply", timeout=30)
        await sim.wait_event("mqtt", action="CONNECT", ok=True, timeout=30)
        async with aiohttp.ClientSession() as http:
            status, body = await _post(http, server, ca, "/api/devices/%s/tasks?wait=10" % BOARD,
                                       {"app_id": "english_translation"})
        assert status == 200 and body["ack"]["code"] == proto.ACK_ACCEPTED, body
        await sim.wait_event("mqtt", req_id=body["req_id"], ok=True)
        assert not [e for e in sim.events if e["event"] == "untrusted"]
    finally:
        await sim.send("quit")
        await sim.wait_exit()


async def _post(http, server, ca, path, body):
    async with http.post(server.http.base_url + path, json=body, ssl=client_context(ca)) as r:
        return r.status, await r.json()


@pytest.mark.parametrize("interp,bad", [("micropython", "wrong_host"), ("micropython", "self_signed"),
                                        ("micropython", "expired"), ("cpython", "expired"),
                                        ("micropython", "no_ca_bundle")])
async def test_a_wrong_certificate_is_refused_on_both_channels_and_said_aloud(interp, bad, ca, tls_server,
                                                                              tmp_path):
    # no_ca_bundle: the right certificate, but the board was given no CA to check it with.
    server = await tls_server(ca.good if bad == "no_ca_bundle" else getattr(ca, bad))
    reason = {"micropython": {"wrong_host": "Common Name (CN) does not match",
                              "self_signed": "not correctly signed by the trusted CA",
                              "expired": "validity has expired",
                              "no_ca_bundle": "no CA bundle"},
              "cpython": {"expired": "certificate has expired"}}[interp][bad]
    trust = [] if bad == "no_ca_bundle" else ["--ca", ca.ca_pem]
    sim = await SimProcess.start(tmp_path / "state", *(["--micropython"] if interp == "micropython" else []),
                                 "--server", server.ws.url, "--mqtt", mqtts(server), *trust,
                                 "--device-id", BOARD, "--speed", "20")    # the spoken line in 0.3 s
    try:
        ws_refused = await sim.wait_event("untrusted", channel="websocket", timeout=60)
        mqtt_refused = await sim.wait_event("untrusted", channel="mqtt", timeout=60)
        for ev in (ws_refused, mqtt_refused):
            assert reason in ev["reason"], ev
        said = await sim.wait_event("prompt", key="server_untrusted", timeout=30)
        assert said["frames"] > 0
        assert [line for line in sim.lines if "certificate of wss://127.0.0.1:%d" % server.ws.port in line
                and "refused" in line and reason in line]
        assert [line for line in sim.lines if "mqtt: server certificate of 127.0.0.1:%d refused" %
                server.broker.tls["port"] in line and reason in line]
        # Once, for both channels, however often MQTT tries again.
        assert len([e for e in sim.events if e["event"] == "prompt"]) == 1
        assert not [e for e in sim.events if e["event"] == "mqtt" and e.get("action") == "CONNECT"]
        assert server.sessions() == 0
    finally:
        await sim.send("quit")
        await sim.wait_exit()


async def test_a_stock_client_speaks_wss_and_ota_hands_out_secure_urls(ca, tls_server):
    server = await tls_server(ca.good)
    async with aiohttp.ClientSession() as http:
        async with http.post(server.http.ota_url, json={}, ssl=client_context(ca),
                             headers={"Device-Id": BOARD, "Client-Id": "c-1"}) as r:
            ota = await r.json()
    assert ota["websocket"]["url"] == "wss://127.0.0.1:%d/xiaozhi/v1/" % server.ws.port
    assert ota["control_mqtt"]["url"] == mqtts(server)
    async with websockets.connect(ota["websocket"]["url"], ssl=client_context(ca),
                                  additional_headers={"Device-Id": BOARD, "Client-Id": "c-1",
                                                      "Protocol-Version": "1"}) as conn:
        await conn.send(json.dumps({"type": "hello", "version": 1, "transport": "websocket",
                                    "audio_params": {"format": "opus", "sample_rate": 16000, "channels": 1,
                                                     "frame_duration": 60}}))
        hello = json.loads(await conn.recv())
    assert hello["type"] == "hello" and hello["transport"] == "websocket"
    # A client that does not trust the CA gets no session.
    with pytest.raises(ssl.SSLCertVerificationError):
        async with websockets.connect(ota["websocket"]["url"], ssl=ssl.create_default_context()):
            pass


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::"])
def test_no_plain_listener_off_loopback_without_allow_plain(host, ca):
    cfg = configmod.merge(configmod.DEFAULTS, {"server": {"host": host}})
    with pytest.raises(configmod.ConfigError, match="no certificate is set"):
        server_tls.refuse_plain_exposure(cfg)
    with pytest.raises(configmod.ConfigError, match="no certificate is set"):
        XiaozhiServer(cfg, with_broker=False, with_mcp=False)
    server_tls.refuse_plain_exposure(configmod.merge(cfg, {"tls": {"allow_plain": True}}))
    server_tls.refuse_plain_exposure(configmod.merge(cfg, {"tls": {"cert": ca.good[0], "key": ca.good[1]}}))
    server_tls.refuse_plain_exposure(configmod.merge(cfg, {"server": {"host": "127.0.0.1"}}))


def test_tls_settings_are_checked_at_start(ca, tmp_path):
    env = {"XIAOZHI_TLS_CERT": ca.good[0]}
    with pytest.raises(configmod.ConfigError, match="tls.cert and tls.key go together"):
        configmod.load(str(tmp_path / "none.yaml"), env=env, write_default=False)
    env["XIAOZHI_TLS_KEY"] = ca.expired[1]       # not this certificate's key
    cfg = configmod.load(str(tmp_path / "none.yaml"), env=env, write_default=False)
    with pytest.raises(configmod.ConfigError, match="not a PEM certificate and its key"):
        server_tls.server_context(cfg)
    cfg["tls"]["cert"] = str(tmp_path / "missing.pem")
    with pytest.raises(configmod.ConfigError, match="missing.pem is missing"):
        server_tls.server_context(cfg)
    assert configmod.load(str(tmp_path / "none.yaml"), env={"XIAOZHI_TLS_ALLOW_PLAIN": "1"},
                          write_default=False)["tls"]["allow_plain"] is True
    with pytest.raises(configmod.ConfigError, match="XIAOZHI_TLS_ALLOW_PLAIN"):
        configmod.load(str(tmp_path / "none.yaml"), env={"XIAOZHI_TLS_ALLOW_PLAIN": "maybe"}, write_default=False)


@pytest.mark.parametrize("trusted", [True, False])
async def test_the_server_links_to_an_outside_broker_over_mqtts(trusted, ca, tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="xiaozhi_server.broker.mqtt")
    broker = Mosquitto(tls=ca.good).start()
    server = None
    try:
        cfg = control_config(tmp_path / "control.db", broker_url="mqtts://127.0.0.1:%d" % broker.tls_port)
        cfg["mqtt"]["ca_file"] = ca.ca_pem if trusted else None     # None: the system's CAs
        server = XiaozhiServer(cfg, with_broker=True, with_mcp=False)
        await server.start()
        if trusted:
            await asyncio.wait_for(server.control.link.connected.wait(), 30)
            assert (await server.control.devices.credentials(BOARD))["mqtt"]["url"].startswith("mqtts://")
        else:
            await eventually(lambda: [r for r in caplog.records if "certificate is refused" in r.getMessage()],
                             timeout=30)
            assert not server.control.link.connected.is_set()
    finally:
        if server is not None:
            await server.stop()
        broker.close()


async def _line(sim, text, timeout=60):
    return await eventually(lambda: [line for line in sim.lines if text in line], timeout=timeout)


@pytest.mark.parametrize("interp", ["micropython", "cpython"])
async def test_a_board_with_a_ca_bundle_speaks_no_plain_unless_told(interp, ca, tmp_path, caplog):
    # A plain server: a board given a CA bundle but an http:// OTA URL (typed
    # wrong, or a server someone else answers for) would hand its identity
    # over in the clear and take a token back; it asks nothing, and tries
    # neither ws:// nor mqtt://.
    caplog.set_level(logging.INFO)
    server = XiaozhiServer(control_config(tmp_path / "control.db",
                                          apps={"opener_lines": {"zh": ["你好呀！"], "en": ["Hi there!"]},
                                                "max_reinvites": 0}),
                           with_broker=True, with_mcp=False)
    await server.start()
    state = tmp_path / "state"
    state.mkdir()
    # A broker login already on the board: the sim asks the server for none.
    (state / "config.json").write_text(json.dumps({"mqtt": {"user": "u", "password": "p"}}))
    mqtt_url = "127.0.0.1:%d" % server.broker.port
    interp_args = ["--micropython"] if interp == "micropython" else []
    try:
        sim = await SimProcess.start(state, *interp_args, "--server", server.http.ota_url, "--mqtt", mqtt_url,
                                     "--ca", ca.ca_pem, "--device-id", BOARD)
        try:
            await _line(sim, "plain http:// to 127.0.0.1:%d refused" % server.http.port)
            await _line(sim, "plain mqtt:// to 127.0.0.1:%d refused" % server.broker.port)
            await _line(sim, "plain ws:// to")
        finally:
            await sim.send("quit")
            await sim.wait_exit()
        assert not [r for r in caplog.records if "OTA check from" in r.getMessage()]
        assert server.sessions() == 0
        # The family's own network, on purpose: tls.allow_plain in config.json.
        cfg = json.loads((state / "config.json").read_text())
        cfg["tls"]["allow_plain"] = True
        (state / "config.json").write_text(json.dumps(cfg))
        sim = await SimProcess.start(state, *interp_args, "--server", server.http.ota_url, "--ca", ca.ca_pem,
                                     "--device-id", BOARD)
        try:
            await sim.wait_event("subtitle", role="assistant", timeout=60)
        finally:
            await sim.send("quit")
            await sim.wait_exit()
    finally:
        await server.stop()
