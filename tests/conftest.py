"""Shared fixtures: seeded random agents, finished match logs, and real databases.

``db_url`` runs a test twice: on a fresh SQLite file and on a fresh schema of the PostgreSQL
server at 127.0.0.1:5432 (COW006_TEST_PG_URL to point elsewhere).  Without that server the
PostgreSQL half skips with one reason, except when COW006_REQUIRE_SERVICES=1 (CI), where it
fails (``helpers.services``).  ``settings``, ``engine`` (the models' tables created) and
``session_factory`` are on that database, for tests/platform and tests/workers alike;
tests/workers overrides ``settings`` with its short leases.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import services
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from cow006 import Agent, MatchInfo, View, play_match
from cow006_platform import db, models
from cow006_platform.settings import Settings

# The files that take longest, longest first (their tests' times summed, as measured with
# ``make test PYTEST_ARGS=--junitxml=...``; docs/testing.md).  Under pytest-xdist (``make
# test``, ``--dist loadfile``) files are handed to the workers in collection order, so a long
# file collected last (tests/workers sorts late) kept one worker busy minutes after the others
# were done: these are collected first instead.  A stale entry costs nothing but order.
LONGEST_FIRST = (
    "tests/platform/test_api_plays.py",
    "tests/platform/web/test_play.py",
    "tests/platform/web/test_axe.py",
    "tests/workers/test_worker_faults.py",
    "tests/platform/web/test_sessions.py",
    "tests/platform/test_cache.py",
    "tests/platform/web/test_pages.py",
    "tests/platform/web/test_play_browser.py",
    "tests/sdk/test_export.py",
    "tests/hostile/test_hostile_text.py",
    "tests/platform/web/test_screenshots.py",
    "tests/platform/test_cache_parts.py",
    "tests/workers/test_work_classes.py",
    "tests/workers/test_worker_serve.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, the files of ``LONGEST_FIRST`` first (a stable sort: every file's tests
    stay together and in order); a serial run keeps pytest's order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {path: n for n, path in enumerate(LONGEST_FIRST)}
    root = config.rootpath

    def key(item: pytest.Item) -> int:
        try:
            return rank.get(item.path.relative_to(root).as_posix(), len(rank))
        except ValueError:  # a test outside the checkout (none today)
            return len(rank)

    items.sort(key=key)


class RandomAgent(Agent):
    """Plays a random card and takes a random row, reproducibly from its agent seed."""

    def __init__(self) -> None:
        self.rng = random.Random(0)

    def on_match_start(self, info: MatchInfo) -> None:
        self.rng = random.Random(info.seed)

    def play(self, view: View) -> int:
        return self.rng.choice(view.hand)

    def take_row(self, view: View) -> int:
        return self.rng.randrange(4)


MakeAgents = Callable[[int], list[Agent]]


@pytest.fixture(scope="session")
def random_agents() -> MakeAgents:
    """A factory: ``random_agents(n)`` gives n fresh seeded random agents."""

    def make(n: int) -> list[Agent]:
        return [RandomAgent() for _ in range(n)]

    return make


@pytest.fixture(scope="session")
def match_log(random_agents: MakeAgents) -> Callable[[int, int], dict[str, Any]]:
    """A factory: ``match_log(n_players, seed)`` plays a random match and returns its log."""

    def make(n: int, seed: int) -> dict[str, Any]:
        return play_match(random_agents(n), seed=seed)

    return make


# The PostgreSQL half needs the server (a service): it is ``slow``, left out by make test-fast.
@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty database: a new SQLite file, or a new PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'test.db'}"
        return
    services.require_pg()
    with services.pg_schema("t") as url:
        yield url


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    """The platform's settings on ``db_url`` (tests/workers adds its short leases and more)."""
    return Settings(database_url=db_url, data_dir=tmp_path / "data")


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    """An engine on the settings' database, with the models' tables created."""
    eng = db.make_engine(settings.database_url)
    models.Base.metadata.create_all(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def session_factory(engine: Engine) -> sessionmaker[Session]:
    return db.make_sessionmaker(engine)
