"""Fixtures for the platform tests: real databases (SQLite files and PostgreSQL), real settings.

Every test that takes ``db_url`` runs twice: on a fresh SQLite file and on a fresh schema of
the PostgreSQL server at 127.0.0.1:5432 (COW006_TEST_PG_URL to point elsewhere).  Without that
server the PostgreSQL half skips with one reason, except when COW006_REQUIRE_SERVICES=1 (CI),
where it fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from apitools import Api, RecordingExecutor
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db, models
from cow006_platform.settings import Settings

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


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=db_url, data_dir=tmp_path / "data")


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    eng = db.make_engine(settings.database_url)
    models.Base.metadata.create_all(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def session_factory(engine: Engine) -> sessionmaker[Session]:
    return db.make_sessionmaker(engine)


# --- the HTTP API (tests/platform/test_api_*.py, test_authz.py, test_schemathesis.py) -------


@pytest.fixture
def executor() -> RecordingExecutor:
    return RecordingExecutor()


@pytest.fixture
def api(settings: Settings, executor: RecordingExecutor) -> Iterator[Api]:
    """The app on a fresh database (SQLite and PostgreSQL) with a recording executor."""
    from fastapi.testclient import TestClient

    from cow006_platform.app import create_app

    app = create_app(settings, executor=executor)
    executor.session_factory = app.state.session_factory
    with TestClient(app) as client:
        yield Api(client, executor, app.state.session_factory)
