"""The server refuses to start with settings that would leave it open while
looking protected (issue 12, item 7): an empty token, a token string where
a list belongs, and a host name that only looks like loopback."""
import subprocess
import sys

import pytest

import testkit
from xiaozhi_server import config as configmod


def run_server(tmp_path, yaml_text, *args):
    path = tmp_path / "server.yaml"
    path.write_text(yaml_text)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(testkit.ROOT / "server")}
    return subprocess.run([sys.executable, "-m", "xiaozhi_server", "run", "--config", str(path), *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("yaml_text,reason", [
    ('auth:\n  tokens: [""]\n', "auth.tokens[0] is ''"),
    ('auth:\n  tokens: ["  "]\n', "auth.tokens[0]"),
    ('auth:\n  tokens: "s3cret"\n', "server.yaml: auth.tokens: expected a list of texts, got 's3cret'"),
    ('auth:\n  tokens: [" s3cret"]\n', "spaces around it"),
    ('limits:\n  ws_text_per_s: 0\n', "limits.ws_text_per_s must be a positive number"),
    ('conversation:\n  keep_hours: 0\n', "conversation.keep_hours must be a positive number"),
    ('conversation:\n  keep_by_default: "no"\n', "conversation.keep_by_default: expected true or false, got 'no'"),
    ('server:\n  workers: 0\n', 'server.workers must be "auto" or a whole number of at least 1, got 0'),
    ('server:\n  workers: "2"\n', "server.workers: expected a whole number or \"auto\", got '2'"),
    ('control:\n  api_token: "7"\n', "control.api_token is too easy to guess (1 characters"),
    ('control:\n  api_token: "aaaaaaaaaaaaaaaaaaaaaaaa"\n', "at least 16 characters with at least 8 different"),
    ('control:\n  api_token: 1234567890123456\n', "control.api_token: expected text or nothing (null), got 1234"),
])
def test_settings_that_weaken_the_server_stop_it_at_start(tmp_path, yaml_text, reason):
    done = run_server(tmp_path, yaml_text, "--host", "0.0.0.0")
    assert done.returncode == 2 and reason in done.stderr, done.stderr


@pytest.mark.parametrize("host", ["127.evil.com", "127.0.0.1.nip.io", "0.0.0.0", "::"])
def test_a_host_that_is_not_loopback_needs_a_token(tmp_path, host):
    done = run_server(tmp_path, "{}\n", "--host", host)
    assert done.returncode == 2 and "exposes the server to the network" in done.stderr, done.stderr


def test_a_plain_listener_off_loopback_needs_a_certificate_or_allow_plain(tmp_path):
    done = run_server(tmp_path, 'auth:\n  tokens: ["s3cret-token"]\n', "--host", "0.0.0.0")
    assert done.returncode == 2 and "no certificate is set" in done.stderr and "tls.allow_plain" in done.stderr, \
        done.stderr


@pytest.mark.parametrize("host,loopback", [
    ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("LOCALHOST", True), ("127.evil.com", False), ("127.0.0.1.nip.io", False), ("0.0.0.0", False),
    ("", False), ("192.168.1.10", False), ("::", False),
])
def test_loopback_is_decided_by_the_address_not_its_spelling(host, loopback):
    assert configmod.is_loopback(host) is loopback


def test_token_from_the_environment_skips_empty_entries():
    cfg = configmod.load("/nonexistent/server.yaml", env={"XIAOZHI_TOKEN": "a,,b"}, write_default=False)
    assert cfg["auth"]["tokens"] == ["a", "b"]


def test_connection_caps_shrink_to_fit_a_low_file_descriptor_limit():
    code = ("import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (700, 700))\n"
            "from xiaozhi_server import config\n"
            "from xiaozhi_server.transport.guard import FD_RESERVE, fit_to_fd_limit\n"
            "limits = dict(config.DEFAULTS['limits']); fit_to_fd_limit(limits)\n"
            "print(limits['http_max_connections'] + limits['ws_max_connections'] + FD_RESERVE,"
            " limits['http_max_pending'] <= limits['http_max_connections'])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(testkit.ROOT / "server")})
    total, pending_fits = done.stdout.split()
    assert int(total) <= 700 and pending_fits == "True", done.stderr
    assert "connection caps lowered" in done.stderr


def test_a_provider_setting_only_workers_build_still_stops_the_start_with_its_reason(tmp_path):
    # The primary of a multi-worker server builds no providers: the workers
    # find the bad one, and the primary says which setting it was.
    done = run_server(tmp_path, "server:\n  ws_port: 0\n  http_port: 0\nmqtt:\n  url: mqtt://127.0.0.1:1\n"
                                "asr:\n  type: nonexistent\n", "--workers", "2")
    assert done.returncode != 0
    assert "could not start: worker" in done.stderr and "unknown asr provider type 'nonexistent'" in done.stderr
    assert "Traceback" not in done.stderr, done.stderr
