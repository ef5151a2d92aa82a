"""Migrations: upgrading creates exactly the schema of the models, on both databases."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from helpers import data as dt
from helpers import races
from sqlalchemy import inspect, text
from sqlalchemy.orm import sessionmaker

from cow006_platform import db, migrate, models

HEAD = "0010_results"


def _downgrade(db_url: str, revision: str) -> None:
    """``alembic downgrade REVISION`` on ``db_url``, on a connection of the platform's engine."""
    from alembic import command

    engine = db.make_engine(db_url)
    try:
        with engine.begin() as conn:
            cfg = migrate.config(db_url)
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, revision)
    finally:
        engine.dispose()


def test_upgrade_creates_exactly_the_models_schema(db_url: str) -> None:
    migrate.upgrade(db_url)
    engine = db.make_engine(db_url)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(ctx, models.Base.metadata)
            tables = set(inspect(conn).get_table_names())
    finally:
        engine.dispose()
    assert diff == []
    assert tables == set(models.Base.metadata.tables) | {"alembic_version"}
    assert migrate.current(db_url) == HEAD


def test_upgrade_twice_is_a_no_op(db_url: str) -> None:
    migrate.upgrade(db_url)
    migrate.upgrade(db_url)
    assert migrate.current(db_url) == HEAD


def test_one_head_and_downgrade_to_empty(db_url: str) -> None:
    script = ScriptDirectory.from_config(migrate.config())
    assert script.get_heads() == [HEAD]
    migrate.upgrade(db_url)
    _downgrade(db_url, "base")
    engine = db.make_engine(db_url)
    try:
        with engine.connect() as conn:
            assert set(inspect(conn).get_table_names()) <= {"alembic_version"}
    finally:
        engine.dispose()


def test_concurrent_upgrades_wait_for_each_other(db_url: str) -> None:
    """Replicas starting together (each runs ``cow006 db upgrade`` on start) all succeed."""
    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite: one machine, one file; replicas are a PostgreSQL matter")
    assert races.at_once(lambda: migrate.upgrade(db_url), 3, timeout=120) == []
    assert migrate.current(db_url) == HEAD


def _counts(db_url: str) -> dict[str, int]:
    engine = db.make_engine(db_url)
    try:
        with engine.connect() as conn:
            return {
                table: conn.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar_one()
                for table in ("users", "agents", "agent_versions", "ladders", "ladder_entries")
            }
    finally:
        engine.dispose()


def test_down_and_up_again_keep_every_row(db_url: str) -> None:
    """Columns are added and dropped in place: on SQLite, batch mode would rebuild a table,
    and dropping its old copy cascade-deletes the rows that refer to it (foreign keys are on).
    The round trip runs over every migration since 0002 with data in the tables."""
    migrate.upgrade(db_url)
    engine = db.make_engine(db_url)
    try:
        with db.session_scope(sessionmaker(engine)) as session:
            lad = dt.ladder(session)
            for _ in range(3):
                v = dt.version(session)
                session.add(
                    models.LadderEntry(ladder_id=lad.id, agent_id=v.agent_id, version_id=v.id)
                )
    finally:
        engine.dispose()
    before = _counts(db_url)
    assert before == {
        "users": 3,
        "agents": 3,
        "agent_versions": 3,
        "ladders": 1,
        "ladder_entries": 3,
    }
    _downgrade(db_url, "0002")
    assert _counts(db_url) == before
    migrate.upgrade(db_url)
    assert _counts(db_url) == before
    assert migrate.current(db_url) == HEAD
