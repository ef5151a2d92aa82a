"""The database: engine and session factory from the settings' URL.

SQLite (the embedded default) gets WAL, a busy timeout and foreign keys; PostgreSQL goes
through psycopg 3.  ``session_scope`` is the one way code outside the API opens a transaction;
``aware`` reads a timestamp back the same way from either.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker


def normalize_url(url: str) -> str:
    """postgresql:// means psycopg 3 here (SQLAlchemy's default driver would be psycopg2)."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def make_engine(url: str, **kwargs: Any) -> Engine:
    url = normalize_url(url)
    if url.startswith("sqlite"):
        path = url.split("///", 1)[1] if "///" in url else ""
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30}, **kwargs
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, **kwargs)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """Sessions on ``engine`` whose commits write the change feed (``changes``)."""
    from .changes import track_changes

    factory = sessionmaker(engine, expire_on_commit=False)
    track_changes(factory)
    return factory


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session in one transaction: committed on success, rolled back on error."""
    with factory() as session, session.begin():
        yield session


def aware(moment: datetime | None) -> datetime | None:
    """A timestamp read back from the database, in UTC (SQLite returns them naive)."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)
