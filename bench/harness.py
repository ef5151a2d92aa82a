"""What the benchmarks that run the platform share: a PostgreSQL database of their own, a free
port, waiting for a server to answer.

The benchmarks are scripts (``python bench/api.py``), so this folder is on ``sys.path`` and
they import this module by its name; nothing here comes from ``tests/``.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time

import httpx
import psycopg
from psycopg import sql


def with_db(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` instead (query string kept)."""
    base, _, query = url.partition("?")
    scheme, _, rest = base.partition("://")
    host = rest.split("/", 1)[0]
    return f"{scheme}://{host}/{name}" + (f"?{query}" if query else "")


def psycopg_url(url: str) -> str:
    """A SQLAlchemy ``postgresql+psycopg://`` URL as psycopg itself takes it."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def recreate_database(admin_url: str, name: str, drop_only: bool = False) -> None:
    """Drop database ``name`` (its connections forced closed) and, unless ``drop_only``,
    create it empty again, through the server of ``admin_url``."""
    with psycopg.connect(psycopg_url(admin_url), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        if not drop_only:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def free_port() -> int:
    """A TCP port of the loopback that nothing listens on (as of now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_answering(
    url: str, proc: subprocess.Popen[bytes] | None = None, timeout: float = 60
) -> None:
    """Wait until GET ``url`` answers 200; SystemExit when ``proc`` (the server, if given)
    exits first or ``timeout`` seconds go by."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise SystemExit(f"the server did not answer in time ({url})")
