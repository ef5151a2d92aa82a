"""``cow006 ready [--worker]`` as a real subprocess (the way an orchestrator's exec probe runs
it), and the worker's structured line per settled match."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import services
from helpers import workers as wt
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db, logs, results
from cow006_platform.models import (
    Match,
    MatchKind,
    MatchStatus,
)
from cow006_platform.settings import Settings
from cow006_workers import runs
from cow006_workers.context import Context

# cow006 ready in subprocesses, the sandbox: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow


def ready(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("COW006_")}
    base.update(
        COW006_DATABASE_URL=f"sqlite:///{tmp_path / 'ready.db'}",
        COW006_BROKER_URL=f"sqla+sqlite:///{tmp_path / 'broker.sqlite'}",
    )
    base.update(env)
    return subprocess.run(
        [sys.executable, "-m", "cow006_workers", "ready", *args],
        env=base,
        cwd=tmp_path,  # nothing may land in the repository's ./var
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ready_on_the_embedded_defaults(tmp_path: Path) -> None:
    done = ready(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["database: ok", "broker: ok"]


def test_not_ready_with_a_dead_broker(tmp_path: Path) -> None:
    done = ready(tmp_path, COW006_BROKER_URL="redis://127.0.0.1:1/0")  # nothing listens there
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == "database: ok"
    assert lines[1].startswith("broker: failed: the broker is unreachable (")
    assert "Traceback" not in done.stdout + done.stderr


def test_not_ready_with_a_dead_database(tmp_path: Path) -> None:
    done = ready(tmp_path, COW006_DATABASE_URL="postgresql://nobody@127.0.0.1:1/none")
    assert done.returncode == 1
    assert done.stdout.splitlines()[0].startswith("database: failed: the database is unreachable")
    assert done.stdout.splitlines()[1] == "broker: ok"


def test_ready_on_postgresql_and_redis(tmp_path: Path) -> None:
    services.require_services()
    done = ready(
        tmp_path,
        COW006_DATABASE_URL=services.PG_URL,
        COW006_BROKER_URL=f"redis://{services.REDIS_HOST}:{services.REDIS_PORT}/{services.REDIS_DB}",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["database: ok", "broker: ok"]


def test_ready_worker_checks_the_sandbox(tmp_path: Path) -> None:
    services.require_sandbox("COW006_REQUIRE_SERVICES", what="cow006 ready --worker")
    done = ready(tmp_path, "--worker", COW006_SANDBOX="on")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["database: ok", "broker: ok", "sandbox: ok"]


def test_a_worker_without_the_sandbox_is_not_ready(tmp_path: Path) -> None:
    done = ready(tmp_path, "--worker", COW006_SANDBOX="on", COW006_BWRAP="cow006-no-such-bwrap")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[:2] == ["database: ok", "broker: ok"]
    assert lines[2].startswith("sandbox: failed: ") and "bubblewrap" in lines[2]


def test_a_settled_match_logs_one_structured_line(
    settings: Settings,
    session_factory: sessionmaker[Session],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A match whose bots' files are missing fails at once; the worker says so in one line
    with the match's fields (and in JSON mode those fields are JSON keys)."""
    vids = wt.active_versions(session_factory, settings, 3)  # never stored: files missing
    with db.session_scope(session_factory) as s:
        match_id = results.create_match(s, kind=MatchKind.challenge, version_ids=vids).id
    ctx = Context.create(settings)
    try:
        with caplog.at_level(logging.INFO, logger="cow006.matches"):
            outcome = runs.run_match(ctx.session_factory, ctx.settings, match_id, lambda ids: None)
    finally:
        ctx.close()
    assert outcome.status == "failed"
    with session_factory() as s:
        match = s.get(Match, match_id)
        assert match is not None and match.status is MatchStatus.failed
    records = [r for r in caplog.records if r.name == "cow006.matches"]
    assert len(records) == 1
    record = records[0]
    assert record.levelno == logging.WARNING
    entry = json.loads(logs.JsonFormatter().format(record))
    assert entry["match_id"] == match_id and entry["status"] == "failed"
    assert entry["faults"] == 0 and 0 <= entry["duration"] < 60
    assert entry["error"] == match.error  # the sentence stored on the match
    assert entry["message"].startswith(f"match {match_id} failed in ")
