"""Fixtures for the platform tests: real databases (SQLite files and PostgreSQL), real settings.

Every test that takes ``db_url`` runs twice: on a fresh SQLite file and on a fresh schema of
the PostgreSQL server at 127.0.0.1:5432 (COW006_TEST_PG_URL to point elsewhere).  Without that
server the PostgreSQL half skips with one reason, except when COW006_REQUIRE_SERVICES=1 (CI),
where it fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from apitools import Api, RecordingExecutor
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db, models
from cow006_platform.settings import Settings


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
