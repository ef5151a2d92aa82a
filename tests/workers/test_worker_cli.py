"""The ``cow006`` command of the root project: the platform's commands plus ``serve``,
``api``, ``worker`` and ``beat``; ``cow006 api`` migrates an empty database and serves; a
worker refuses to join without a working sandbox; the API's ``CeleryExecutor`` survives a
dead broker."""

from __future__ import annotations

import logging
import signal
import sys
import time
import tomllib
from pathlib import Path

import pytest
from helpers import servers
from typer.testing import CliRunner

from cow006_platform.executor import CeleryExecutor
from cow006_workers.cli import build_app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def test_the_console_script_is_the_workers_command() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["cow006"] == "cow006_workers.cli:main"
    assert any(dep.startswith("celery[redis]") for dep in project["project"]["dependencies"])


def test_help_lists_every_command() -> None:
    r = runner.invoke(build_app(), ["--help"])
    assert r.exit_code == 0, r.output
    commands = ("match", "tournament", "verify", "admin", "db", "serve", "api", "worker", "beat")
    for command in commands:
        assert command in r.stdout
    for command, option in (("serve", "--workers"), ("worker", "--concurrency")):
        r = runner.invoke(build_app(), [command, "--help"])
        assert r.exit_code == 0 and option in r.stdout


@pytest.mark.slow
def test_a_worker_without_the_sandbox_does_not_join() -> None:
    r = runner.invoke(
        build_app(),
        ["worker", "--concurrency", "1"],
        env={"COW006_BWRAP": "cow006-no-such-bwrap", "COW006_SANDBOX": "on"},
    )
    assert r.exit_code == 1
    assert r.stderr.startswith("error: ") and "sandbox" in r.stderr


@pytest.mark.slow
def test_a_dead_broker_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    """The API's executor never fails a request for the broker: the row is in the database
    and the reaper sends its task later."""
    executor = CeleryExecutor("redis://127.0.0.1:1/0")  # nothing listens on port 1
    try:
        started = time.monotonic()
        with caplog.at_level(logging.ERROR, logger="cow006_platform.executor"):
            executor.submit_match(1)
            executor.submit_validation(2)
        assert time.monotonic() - started < 10
    finally:
        executor.close()
    messages = [r.getMessage() for r in caplog.records]
    assert any("cow006.run_match(1)" in m and "reaper" in m for m in messages)
    assert any("cow006.validate_version(2)" in m for m in messages)


@pytest.mark.slow
def test_api_migrates_then_serves(tmp_path: Path) -> None:
    """``cow006 api`` creates the schema of an empty database before uvicorn starts, then
    answers on the port; SIGTERM stops it.  SQLite everywhere: no service is needed."""
    env = servers.clean_env(
        COW006_DATABASE_URL=f"sqlite:///{tmp_path / 'api.db'}",
        COW006_BROKER_URL=f"sqla+sqlite:///{tmp_path / 'broker.sqlite'}",
        COW006_DATA_DIR=str(tmp_path / "data"),
    )
    argv = [sys.executable, "-m", "cow006_workers", "api", "--host", "127.0.0.1"]
    api = servers.serve(
        [*argv, "--loglevel", "info"], cwd=tmp_path, env=env, out=tmp_path / "api.out"
    )
    try:
        servers.wait_http(api, "/api/ladders")
        assert (tmp_path / "api.db").is_file()
    finally:
        code = servers.stop(api)
    # A graceful stop: uvicorn finishes the app's shutdown, then re-raises the SIGTERM it
    # caught (uvicorn >= 0.29), so the status is that of the signal.
    text = (tmp_path / "api.out").read_text()
    assert code in (0, -signal.SIGTERM), text[-3000:]
    assert "Application shutdown complete" in text, text[-3000:]
