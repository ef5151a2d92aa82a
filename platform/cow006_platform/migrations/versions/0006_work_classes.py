"""Work classes: challenge rules per owner and queued-work bookkeeping.

* ``agents.accepts_challenges``: the owner may refuse to have the agent seated in other
  users' challenges;
* ``matches.held``: a challenge waiting in the database for admission to the broker;
* ``matches.requested_from`` and ``agent_versions.uploaded_from``: the client address of a
  challenge or an upload, for the per-address caps;
* ``ix_matches_started_at``: the challenges' share of the latest matches started.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMN, never SQLite's batch mode: rebuilding a table drops its old copy,
    # and with foreign keys on that cascade-deletes every row that refers to it.
    op.add_column(
        "agents",
        sa.Column("accepts_challenges", sa.Boolean(), nullable=False, server_default=sa.true()),
    )
    op.add_column("agent_versions", sa.Column("uploaded_from", sa.String(length=64), nullable=True))
    op.add_column("matches", sa.Column("requested_from", sa.String(length=64), nullable=True))
    op.add_column(
        "matches", sa.Column("held", sa.Boolean(), nullable=False, server_default=sa.false())
    )
    op.create_index(
        "ix_agent_versions_uploaded_from",
        "agent_versions",
        ["uploaded_from", "created_at"],
        unique=False,
    )
    op.create_index(
        "ix_matches_requested_from", "matches", ["requested_from", "created_at"], unique=False
    )
    op.create_index("ix_matches_started_at", "matches", ["started_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_matches_started_at", table_name="matches")
    op.drop_index("ix_matches_requested_from", table_name="matches")
    op.drop_index("ix_agent_versions_uploaded_from", table_name="agent_versions")
    for table, column in (
        ("matches", "held"),
        ("matches", "requested_from"),
        ("agent_versions", "uploaded_from"),
        ("agents", "accepts_challenges"),
    ):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
