"""The ``cow006`` command of the root project: the platform's commands plus ``serve``,
``worker`` and ``beat``; a worker refuses to join without a working sandbox; the API's
``CeleryExecutor`` survives a dead broker."""

from __future__ import annotations

import logging
import time
import tomllib
from pathlib import Path

import pytest
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
    for command in ("match", "tournament", "verify", "admin", "db", "serve", "worker", "beat"):
        assert command in r.stdout
    for command, option in (("serve", "--workers"), ("worker", "--concurrency")):
        r = runner.invoke(build_app(), [command, "--help"])
        assert r.exit_code == 0 and option in r.stdout


def test_a_worker_without_the_sandbox_does_not_join() -> None:
    r = runner.invoke(
        build_app(),
        ["worker", "--concurrency", "1"],
        env={"COW006_BWRAP": "cow006-no-such-bwrap", "COW006_SANDBOX": "on"},
    )
    assert r.exit_code == 1
    assert r.stderr.startswith("error: ") and "sandbox" in r.stderr


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
