"""What a person sees from ``cow006 serve`` (issue 20): a short banner with the URL first, then
one line per event, and none of the children's banners, warnings, INFO lines or tracebacks.

The slow test runs the real command on a free loopback port in an empty folder (its data
under ./var there) and reads its first 20 lines, within a bounded wait; the fast ones check
the event lines' cleaning of hostile names and the banner's lines.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import servers, services

from cow006_platform.settings import Settings
from cow006_workers import serve
from cow006_workers.serve_events import clean

# What must not show in the quiet output: Celery's banner and root warning, Alembic's and
# uvicorn's INFO lines, any warning or traceback.
NOISE = re.compile(
    r"Traceback|Warning|WARNING|INFO|-------------- |\[config\]|\[queues\]|transport:|"
    r"superuser|alembic|Uvicorn running"
)


def _first_lines(out: Path, count: int, timeout: float, proc: subprocess.Popen[bytes]) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = out.read_text(errors="replace").splitlines()
        if len(lines) >= count or proc.poll() is not None:
            return lines[:count]
        time.sleep(0.3)
    return out.read_text(errors="replace").splitlines()[:count]


@pytest.mark.slow
def test_serve_prints_a_banner_then_one_line_per_event(tmp_path: Path) -> None:
    services.require_sandbox("COW006_REQUIRE_SERVICES", what="cow006 serve")
    argv = [sys.executable, "-m", "cow006_workers", "serve", "--workers", "2"]
    served = servers.serve(argv, cwd=tmp_path, env=servers.clean_env(), out=tmp_path / "serve.out")
    proc = served.proc
    try:
        lines = _first_lines(served.out, 20, 90.0, proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = "\n".join(lines)
    assert len(lines) == 20, text
    assert any(f"http://127.0.0.1:{served.port}/" in line for line in lines[:5]), text
    assert not NOISE.search(text), text
    assert str(tmp_path / "var") in text  # where the data lives
    assert f"http://127.0.0.1:{served.port}/ladders/" in text  # the demo ladder's link
    assert "Ctrl-C" in text
    assert "worker (2 matches at once, prefork) started" in text
    assert re.search(r"^version builtin-\S+@1 validated$", text, re.M), text
    assert re.search(r"^match \d+ finished \(demo ladder\): ", text, re.M), text


def test_event_text_is_one_bounded_printable_line() -> None:
    hostile = "\x1b[2J\x1b]0;pwned\x07evil\rname\nsecond line"
    cleaned = clean(hostile)
    assert "\x1b" not in cleaned and "\x07" not in cleaned and "\r" not in cleaned
    assert "second line" not in cleaned
    assert cleaned.startswith("?[2J?]0;pwned?evil")
    assert len(clean("x" * 10_000)) == 120
    assert clean(None) == "" and clean("  \n ") == ""


def test_banner_starts_with_the_url_and_names_the_data(tmp_path: Path) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path}/a.db", data_dir=tmp_path / "bots", sandbox="on"
    )
    lines = serve.banner(settings, "0.0.0.0", 8123, 7)
    assert lines[0] == "Корова 006 arena at http://127.0.0.1:8123/"
    assert "http://127.0.0.1:8123/ladders/7" in lines[1]
    assert f"{tmp_path}/a.db" in lines[2] and f"{tmp_path}/bots" in lines[2]
    assert len(lines) <= 5
    assert serve.banner(settings, "::1", 8123, 7)[0] == "Корова 006 arena at http://[::1]:8123/"


def test_the_database_password_is_not_shown() -> None:
    settings = Settings(database_url="postgresql://arena:s3cret@db.example/arena")
    shown = serve.where_data_lives(settings)
    assert "s3cret" not in shown and "db.example/arena" in shown


def test_the_root_note_says_whether_bots_run_as_root() -> None:
    sandboxed, unconfined = Settings(sandbox="on"), Settings(sandbox="off")
    if os.geteuid() != 0:
        assert serve.root_note(sandboxed) is None and serve.root_note(unconfined) is None
        return
    assert "sandboxed, as unprivileged users" in (serve.root_note(sandboxed) or "")
    assert "unconfined, as root" in (serve.root_note(unconfined) or "")
    assert any("note: running as root" in line for line in serve.banner(sandboxed, "::1", 1, 1))
