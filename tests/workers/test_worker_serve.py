"""``cow006 serve`` on the embedded defaults: SQLite, the SQLite broker, no Redis, no
PostgreSQL, everything under ./var of an empty folder.

Within 60 s of the command's start the demo ladder's leaderboard shows played matches; SIGTERM
then stops it cleanly (exit status 0) and leaves no process behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from helpers import servers, services

# The whole arena in subprocesses: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow

Ident = tuple[int, int]  # (pid, start time): a pid alone may be reused


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _descendants(pid: int) -> set[Ident]:
    """Every live process below ``pid`` (children, grandchildren, ...)."""
    parent: dict[Ident, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat(int(name))
            if fields is not None and fields[0] != "Z":
                parent[(int(name), int(fields[19]))] = int(fields[1])
    out: set[Ident] = set()
    frontier = {pid}
    while frontier:
        found = {ident for ident, pp in parent.items() if pp in frontier} - out
        out |= found
        frontier = {p for p, _ in found}
    return out


def _alive(ident: Ident) -> bool:
    fields = _stat(ident[0])
    return fields is not None and fields[0] not in ("Z", "X") and int(fields[19]) == ident[1]


def test_serve_runs_the_demo_arena_on_embedded_defaults(tmp_path: Path) -> None:
    services.require_sandbox("COW006_REQUIRE_SERVICES", what="cow006 serve")
    started = time.monotonic()
    argv = [sys.executable, "-m", "cow006_workers", "serve", "--workers", "2"]
    served = servers.serve(argv, cwd=tmp_path, env=servers.clean_env(), out=tmp_path / "serve.out")
    proc = served.proc
    seen: set[Ident] = set()
    try:
        base = served.base

        def played() -> bool:
            seen.update(_descendants(proc.pid))
            assert proc.poll() is None, (tmp_path / "serve.out").read_text()[-3000:]
            try:
                ladders = httpx.get(f"{base}/api/ladders", timeout=5).json()["items"]
                demo = next(lad for lad in ladders if lad["name"] == "demo")
                board = httpx.get(f"{base}/api/ladders/{demo['id']}/leaderboard", timeout=5)
            except (httpx.HTTPError, StopIteration, KeyError):
                return False
            rows = board.json()["items"]
            return len(rows) == 4 and all(row["matches"] > 0 for row in rows)

        servers.wait_for(played, 60 - (time.monotonic() - started), every=0.5)
        assert (tmp_path / "var" / "cow006.db").is_file()
        assert (tmp_path / "var" / "broker.sqlite").is_file()
        assert "arena at http://127.0.0.1:" in (tmp_path / "serve.out").read_text()
        seen.update(_descendants(proc.pid))
        assert len(seen) >= 3  # the API, the worker pool and the scheduler at least
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        finally:
            left = [ident for ident in seen if _alive(ident)]
            for pid, _ in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert code == 0, (tmp_path / "serve.out").read_text()[-3000:]
    assert not left, f"processes left behind: {left}"
