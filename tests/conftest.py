"""Shared fixtures: seeded random agents, finished match logs, and empty real databases.

``db_url`` runs a test twice: on a fresh SQLite file and on a fresh schema of the PostgreSQL
server at 127.0.0.1:5432 (COW006_TEST_PG_URL to point elsewhere).  Without that server the
PostgreSQL half skips with one reason, except when COW006_REQUIRE_SERVICES=1 (CI), where it
fails.
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from cow006 import Agent, MatchInfo, View, play_match


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


PG_URL = os.environ.get("COW006_TEST_PG_URL", "postgresql+psycopg://root@127.0.0.1:5432/test")
_pg_state: dict[str, str | None] = {}


def _pg_problem() -> str | None:
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


def require_pg() -> None:
    problem = _pg_problem()
    if problem is None:
        return
    reason = f"PostgreSQL at {PG_URL} is not reachable ({problem})"
    if os.environ.get("COW006_REQUIRE_SERVICES") == "1":
        pytest.fail(f"COW006_REQUIRE_SERVICES=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty database: a new SQLite file, or a new PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'test.db'}"
        return
    require_pg()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in PG_URL else "?"
    yield f"{PG_URL}{sep}options=-csearch_path%3D{schema}"
    with admin.begin() as conn:
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    admin.dispose()
