"""Bot-caused failures: counted per version, suspension from ladder tables with a reason;
and a repair of bot text stored before it was cleaned.

Before bot text was cleaned (``cow006.untrusted``), a lone surrogate in a fault detail was
stored JSON-escaped in ``matches.faults`` and in the compressed log, and every page showing
the match answered 500 for good; SQLite also kept NUL in stderr and reasons.  The upgrade
replaces those characters with U+FFFD in the rows that hold them (PostgreSQL refused them at
the time, so it finds none).  The cleaning is inlined: a migration must not change with the
code.
"""

from __future__ import annotations

import gzip
import json
import re
from typing import Any

import sqlalchemy as sa
from alembic import op

from cow006_platform.migrations import _ops

revision: str = "0003"  # created 2026-12-01
down_revision: str | None = "0002"

_COLUMNS = ("suspended_reason", "suspended_at", "validation_attempts", "consecutive_failures")


_DIRTY = re.compile("[\x00\ud800-\udfff]")


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return _DIRTY.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _repair(bind: sa.engine.Connection) -> None:
    meta = sa.MetaData()
    matches = sa.Table(
        "matches",
        meta,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("faults", sa.JSON),
    )
    logs = sa.Table(
        "match_logs",
        meta,
        sa.Column("match_id", sa.Integer, primary_key=True),
        sa.Column("body", sa.LargeBinary),
    )
    # JSON escapes a lone surrogate (and a pair: checked in Python) as \udXXX, NUL as \u0000.
    as_text = sa.cast(matches.c.faults, sa.Text)
    dirty = bind.execute(
        sa.select(matches.c.id, matches.c.faults).where(
            sa.or_(as_text.like("%\\ud%", escape="!"), as_text.like("%\\u0000%", escape="!"))
        )
    ).all()
    for match_id, faults in dirty:
        cleaned = _clean(faults)
        if cleaned == faults:
            continue  # only real surrogate pairs (non-BMP characters)
        bind.execute(matches.update().where(matches.c.id == match_id).values(faults=cleaned))
        body = bind.scalar(sa.select(logs.c.body).where(logs.c.match_id == match_id))
        if body is not None:
            log = _clean(json.loads(gzip.decompress(body)))
            fixed = gzip.compress(json.dumps(log, separators=(",", ":")).encode("utf-8"), mtime=0)
            bind.execute(logs.update().where(logs.c.match_id == match_id).values(body=fixed))
    if bind.dialect.name != "sqlite":
        return  # PostgreSQL text never held NUL
    for table, key, column in (
        ("match_seats", "id", "stderr"),
        ("agent_versions", "id", "reason"),
        ("matches", "id", "error"),
    ):
        rows = bind.execute(
            sa.text(f"SELECT {key}, {column} FROM {table} WHERE instr({column}, char(0)) > 0")
        ).all()
        for row_id, value in rows:
            bind.execute(
                sa.text(f"UPDATE {table} SET {column} = :v WHERE {key} = :k"),
                {"v": _clean(value), "k": row_id},
            )


def upgrade() -> None:
    _ops.add_columns(
        "agent_versions",
        sa.Column("consecutive_failures", sa.Integer(), server_default="0", nullable=False),
        sa.Column("validation_attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("suspended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("suspended_reason", sa.Text(), nullable=True),
    )
    _repair(op.get_bind())


def downgrade() -> None:
    _ops.drop_columns("agent_versions", *_COLUMNS)
