"""Ladder limits: the CPU share each bot of a ladder's matches gets in its sandbox slot.

``ladders.cpu_share``: cores of CPU time per bot (the slot cgroup's quota; 1.0, one core,
for the ladders that exist).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "ladders",
        sa.Column("cpu_share", sa.Float(), server_default="1.0", nullable=False),
    )


def downgrade() -> None:
    # Plain ALTER TABLE DROP COLUMN (PostgreSQL, SQLite 3.35+): SQLite's batch mode would
    # rebuild the table, and dropping the old copy cascade-deletes rows that refer to it.
    op.execute("ALTER TABLE ladders DROP COLUMN cpu_share")
