"""Fixtures of the platform tests: the HTTP API on a fresh database with a recording executor.

The database fixtures (``db_url``, ``settings``, ``engine``, ``session_factory``: SQLite and
PostgreSQL) are tests/conftest.py's, shared with the worker tests.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.api import Api, RecordingExecutor

from cow006_platform.settings import Settings

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
