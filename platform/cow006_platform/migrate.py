"""Database migrations (Alembic), run programmatically: ``upgrade(url)`` brings a database to
the latest schema.

The Alembic environment lives in the package (``migrations/``), so no ini file or working
directory is needed; ``alembic.ini`` beside this module serves the ``alembic`` command line
(``alembic -c platform/cow006_platform/alembic.ini revision --autogenerate -m ...``).
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text

from . import db

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# The PostgreSQL advisory lock held while migrating (any constant of our own).
MIGRATION_LOCK = 0x006C0E


def config(url: str | None = None) -> Config:
    """A programmatic Alembic config pointing at the package's migrations."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if url is not None:
        # '%' is interpolation syntax in Alembic's config: a URL's %-escapes must be doubled.
        cfg.set_main_option("sqlalchemy.url", db.normalize_url(url).replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Upgrade the database at ``url`` to ``revision`` (the latest by default)."""
    engine = db.make_engine(url)
    try:
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                # Replicas of the API migrate on start: the first one through migrates, the
                # others wait here for its commit, then find nothing left to do.
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
            cfg = config(url)
            # env.py uses this connection (with the engine's SQLite pragmas) rather than
            # building its own from the URL.
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
    finally:
        engine.dispose()


def current(url: str) -> str | None:
    """The revision the database at ``url`` is at (None: not under migration control)."""
    from alembic.runtime.migration import MigrationContext

    engine = db.make_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
