"""The services some tests need: PostgreSQL, Redis and the sandbox.

Each ``require_*`` skips the test with one reason when its service is missing, except where
CI requires it: ``COW006_REQUIRE_SERVICES=1`` (PostgreSQL, Redis; the sandbox of the worker
tests) or ``COW006_REQUIRE_SANDBOX=1`` (the sandbox), where the test fails instead.  PostgreSQL
is at 127.0.0.1:5432 (``COW006_TEST_PG_URL`` to point elsewhere), Redis at 127.0.0.1:6379 with
database ``COW006_TEST_REDIS_DB`` (7).  Redis is spoken to in RESP over a socket: no client
library is needed.

Under pytest-xdist (``make test``) the workers share both servers but nothing in them: each
PostgreSQL user gets a schema of its own (``pg_schema``), and worker ``gwN`` a Redis database
of its own, ``COW006_TEST_REDIS_DB + N`` (``REDIS_DB``; Redis has 16).  The test that stops
Redis stops a private server of its own (``private_redis``), never the shared one.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from cow006 import sandbox

PG_URL = os.environ.get("COW006_TEST_PG_URL", "postgresql+psycopg://root@127.0.0.1:5432/test")
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379


def xdist_worker() -> int:
    """This pytest-xdist worker's number (``gw3``: 3), or 0 outside xdist."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


REDIS_DB = int(os.environ.get("COW006_TEST_REDIS_DB", "7")) + xdist_worker()
_pg_state: dict[str, str | None] = {}


def _skip_or_fail(reason: str, strict_env: str) -> None:
    """Skip with ``reason``, or fail with it when ``strict_env`` is set to 1."""
    if os.environ.get(strict_env) == "1":
        pytest.fail(f"{strict_env}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


# -- PostgreSQL -------------------------------------------------------------------------------


def pg_problem() -> str | None:
    """None if the PostgreSQL test server answers, else why not (checked once)."""
    if "problem" not in _pg_state:
        try:
            eng = create_engine(PG_URL, connect_args={"connect_timeout": 3})
            with eng.connect() as conn:
                conn.execute(text("select 1"))
            eng.dispose()
            _pg_state["problem"] = None
        except Exception as exc:  # any failure to connect means: no server for these tests
            _pg_state["problem"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return _pg_state["problem"]


@contextlib.contextmanager
def pg_schema(prefix: str) -> Iterator[str]:
    """A new schema of the PostgreSQL test server (named ``prefix_`` and 12 hex digits) and a
    URL whose connections use it; dropped with all it holds on exit."""
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in PG_URL else "?"
    try:
        yield f"{PG_URL}{sep}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def require_pg() -> None:
    problem = pg_problem()
    if problem is not None:
        _skip_or_fail(
            f"PostgreSQL at {PG_URL} is not reachable ({problem})", "COW006_REQUIRE_SERVICES"
        )


# -- Redis ------------------------------------------------------------------------------------


def redis_ping(timeout: float = 1.0, port: int = REDIS_PORT) -> bool:
    try:
        with socket.create_connection((REDIS_HOST, port), timeout=timeout) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def redis_command(*args: str) -> bytes:
    """One command in RESP, the raw reply."""
    payload = f"*{len(args)}\r\n".encode()
    for a in args:
        data = a.encode()
        payload += b"$%d\r\n%s\r\n" % (len(data), data)
    with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=5) as s:
        s.sendall(payload)
        return s.recv(4096)


def _reply_line(sock: socket.socket) -> bytes:
    """One line of a Redis reply (a status or an error), without its CRLF."""
    line = b""
    while not line.endswith(b"\r\n"):
        chunk = sock.recv(1)
        if not chunk:
            break
        line += chunk
    return line.rstrip(b"\r\n")


def flush_redis() -> None:
    """Empty the test database of Redis (``REDIS_DB``); RuntimeError if Redis has no such
    database (more xdist workers than its 16 databases allow past COW006_TEST_REDIS_DB).
    FLUSHDB is sent only once SELECT said OK: after a refused SELECT it would empty
    database 0."""
    with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=5) as s:
        s.sendall(f"SELECT {REDIS_DB}\r\n".encode())
        selected = _reply_line(s)
        if selected != b"+OK":
            raise RuntimeError(
                f"Redis refused its test database {REDIS_DB} ({selected[:80]!r}): set"
                " COW006_TEST_REDIS_DB lower or run fewer pytest-xdist workers"
            )
        s.sendall(b"FLUSHDB\r\n")
        _reply_line(s)


@dataclass
class PrivateRedis:
    """A Redis server of one test's own on a free loopback port, which it may stop and start
    again (``stop``, ``start``) without touching the Redis every other test uses."""

    port: int
    folder: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{REDIS_HOST}:{self.port}/0"

    def ping(self) -> bool:
        return redis_ping(0.5, self.port)

    def start(self) -> None:
        """Start it (on the same port) if it is down; wait until it answers."""
        if self.ping():
            return
        argv = ["redis-server", "--bind", REDIS_HOST, "--port", str(self.port)]
        argv += ["--save", "", "--appendonly", "no", "--dir", str(self.folder)]
        with open(self.folder / "redis.log", "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while not self.ping():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log_text = (self.folder / "redis.log").read_text(errors="replace")[-1000:]
                raise RuntimeError(f"a private Redis on port {self.port} did not start: {log_text}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Shut it down, dropping everything it holds; wait until it is gone."""
        if self.proc is None:
            return
        self.proc.terminate()  # redis-server shuts down on SIGTERM (no save: --save "")
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None


@contextlib.contextmanager
def private_redis(folder: Path) -> Iterator[PrivateRedis]:
    """A ``PrivateRedis`` started in ``folder``, stopped on exit."""
    from helpers.servers import free_port

    folder.mkdir(parents=True, exist_ok=True)
    server = PrivateRedis(free_port(), folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()


# -- the sandbox, and all of them -------------------------------------------------------------


def require_sandbox(strict_env: str = "COW006_REQUIRE_SANDBOX", what: str = "these tests") -> None:
    """Skip (with the reason) where the sandbox does not work; fail instead when
    ``strict_env`` is 1 (the worker processes' tests name COW006_REQUIRE_SERVICES)."""
    status = sandbox.probe()
    if not status.ok:
        _skip_or_fail(
            f"{what} need the sandbox, which does not work here: {status.reason}", strict_env
        )


def require_services() -> None:
    """Skip (one loud reason) without Redis, PostgreSQL or the sandbox; fail instead when
    COW006_REQUIRE_SERVICES=1."""
    problems = []
    if not redis_ping():
        problems.append(f"Redis at {REDIS_HOST}:{REDIS_PORT} does not answer")
    pg = pg_problem()
    if pg is not None:
        problems.append(f"PostgreSQL at {PG_URL} is not reachable ({pg})")
    status = sandbox.probe()
    if not status.ok:
        problems.append(f"the sandbox does not work here ({status.reason})")
    if problems:
        reason = "the worker tests need real services: " + "; ".join(problems)
        _skip_or_fail(reason, "COW006_REQUIRE_SERVICES")
