"""The served configuration (issue 14): ``cow006 api`` closes connections that do not send
their headers in time, caps header bytes, listens on the loopback by default, and restricts
``/metrics`` (a token by default, or its own address)."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import typer
from helpers import servers

from cow006_platform.settings import Settings
from cow006_workers.cli import build_app
from cow006_workers.httpserver import parse_address

# cow006 api in a subprocess: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow


def _start(root: Path, **env_settings: str) -> servers.Server:
    """``cow006 api`` on a free port, ``env_settings`` as COW006_* variables; once it answers."""
    env = servers.clean_env(
        COW006_DATABASE_URL=f"sqlite:///{root / 'api.db'}",
        COW006_BROKER_URL=f"sqla+sqlite:///{root / 'broker.sqlite'}",
        COW006_DATA_DIR=str(root / "data"),
        **{f"COW006_{k.upper()}": v for k, v in env_settings.items()},
    )
    argv = [sys.executable, "-m", "cow006_workers", "api", "--loglevel", "warning"]
    api = servers.serve([*argv, "--no-access-log"], cwd=root, env=env, out=root / "api.out")
    try:
        servers.wait_http(api, "/healthz")
    except BaseException:
        servers.stop(api)
        raise
    return api


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Iterator[servers.Server]:
    """``cow006 api`` with a 1 s header timeout and 1 s keep-alive."""
    root = tmp_path_factory.mktemp("served")
    api = _start(root, header_timeout="1", keepalive_seconds="1", max_header_bytes="8192")
    try:
        yield api
    finally:
        servers.stop(api)


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closes ``sock`` within ``within`` seconds (we send nothing more)."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    return True


def test_idle_and_incomplete_connections_are_closed_within_the_timeout(
    quick: servers.Server,
) -> None:
    idle = [socket.create_connection(("127.0.0.1", quick.port)) for _ in range(200)]
    partial = []
    for i in range(50):
        s = socket.create_connection(("127.0.0.1", quick.port))
        s.sendall(f"GET /api/ladders HTTP/1.1\r\nHost: x\r\nX-Slow-{i}: ".encode())
        partial.append(s)
    started = time.monotonic()
    # A slow client keeps sending a byte of its headers every 0.2 s: still cut at 1 s.
    slow = socket.create_connection(("127.0.0.1", quick.port))
    slow.sendall(b"GET /api/ladders HTTP/1.1\r\nHost: x\r\n")
    slow.setblocking(False)
    closed_slow = False
    try:
        for _ in range(20):
            time.sleep(0.2)
            slow.send(b"X")
    except (BrokenPipeError, ConnectionResetError):
        closed_slow = True
    assert closed_slow, "a header sent a byte at a time was never cut off"
    try:
        for s in idle + partial:
            remaining = max(0.1, started + 4.0 - time.monotonic())
            assert _closed_by_server(s, remaining), "a connection outlived the header timeout"
        assert time.monotonic() - started < 4.5
    finally:
        for s in [*idle, *partial, slow]:
            s.close()
    # The server still answers.
    assert httpx.get(f"{quick.base}/api/ladders", timeout=5).status_code == 200


def test_an_answered_connection_idles_out_after_the_keepalive(quick: servers.Server) -> None:
    with socket.create_connection(("127.0.0.1", quick.port)) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.3)
        assert s.recv(65536).startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        assert _closed_by_server(s, 4.0)
        assert time.monotonic() - started < 3.0


def test_huge_headers_are_refused(quick: servers.Server) -> None:
    with socket.create_connection(("127.0.0.1", quick.port), timeout=10) as s:
        s.sendall(b"GET /api/ladders?junk=" + b"x" * 60_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        try:
            while chunk := s.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    assert answer.startswith(b"HTTP/1.1 431"), answer[:100]


def test_metrics_need_a_token_by_default(quick: servers.Server) -> None:
    r = httpx.get(f"{quick.base}/metrics", timeout=10)
    assert r.status_code == 401 and "metrics token" in r.json()["detail"]
    user = httpx.post(f"{quick.base}/api/users", json={"name": "scraper"}, timeout=10)
    token = user.json()["token"]
    r = httpx.get(f"{quick.base}/metrics", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 403  # a user, not an admin
    r = httpx.get(f"{quick.base}/metrics", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401


def test_metrics_with_the_metrics_token(tmp_path: Path) -> None:
    api = _start(tmp_path, metrics_token="s3cret-metrics-token")
    try:
        r = httpx.get(
            f"{api.base}/metrics", headers={"Authorization": "Bearer s3cret-metrics-token"}
        )
        assert r.status_code == 200 and "cow006_http_requests" in r.text
        assert httpx.get(f"{api.base}/metrics").status_code == 401
    finally:
        servers.stop(api)


def test_metrics_on_their_own_address(tmp_path: Path) -> None:
    port = servers.free_port()
    api = _start(tmp_path, metrics="bind", metrics_bind=f"127.0.0.1:{port}")
    try:
        assert httpx.get(f"{api.base}/metrics").status_code == 404
        r = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
        assert r.status_code == 200 and "cow006_http_requests" in r.text
        assert httpx.get(f"http://127.0.0.1:{port}/api/ladders").status_code == 404
        assert httpx.get(f"{api.base}/api/ladders").status_code == 200
    finally:
        servers.stop(api)


def test_api_listens_on_the_loopback_by_default() -> None:
    command = typer.main.get_command(build_app()).commands["api"]  # type: ignore[attr-defined]
    host = next(p for p in command.params if p.name == "host")
    assert host.default == "127.0.0.1"


def test_metrics_bind_addresses() -> None:
    assert parse_address("127.0.0.1:9100") == ("127.0.0.1", 9100)
    assert parse_address("[::1]:9100") == ("::1", 9100)
    with pytest.raises(ValueError):
        parse_address("9100")
    assert Settings().metrics == "token"
