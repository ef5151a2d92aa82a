"""Fixtures of the worker tests.

``db_url`` / ``settings`` / ``session_factory``: the in-process tests of the scheduler, the
reaper and the lease, on a fresh SQLite file and on a fresh PostgreSQL schema (the PostgreSQL
half skips without the server, or fails with COW006_REQUIRE_SERVICES=1).  They are
tests/conftest.py's; ``settings`` is overridden here with the workers' short leases.

``arena``: real Celery worker processes on Redis and PostgreSQL (``helpers.workers.Arena``); the
test skips with one reason when a service is missing (fails with COW006_REQUIRE_SERVICES=1).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import services
from helpers import workers as wt

from cow006_platform.settings import Settings


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    return Settings(
        database_url=db_url,
        data_dir=tmp_path / "data",
        sandbox="on",
        lease_seconds=3.0,
        heartbeat_seconds=0.5,
        requeue_seconds=5.0,
        reaper_period=1.0,
        ladder_queue_depth=3,
    )


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[wt.Arena]:
    services.require_services()
    for arena in wt.make_arena(tmp_path):
        # Orphans of killed workers are reaped here (see wt.reaping).
        with wt.reaping(arena):
            yield arena
