"""Fair tables: ladders that allow one owner's versions at one table; secret bot seeds.

``ladders.allow_same_owner`` (false for every existing ladder: matchmaking then never seats two
versions of one owner together).  The secret bot seeds need no column: they are drawn when a
match is played and recorded in its log (``agent_seeds``).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # '0' is false for both SQLite and PostgreSQL booleans.
    op.add_column(
        "ladders",
        sa.Column("allow_same_owner", sa.Boolean(), server_default="0", nullable=False),
    )


def downgrade() -> None:
    # Plain ALTER TABLE DROP COLUMN (PostgreSQL, SQLite 3.35+): SQLite's batch mode would
    # rebuild the table, and dropping the old copy cascade-deletes rows that refer to it.
    op.execute("ALTER TABLE ladders DROP COLUMN allow_same_owner")
