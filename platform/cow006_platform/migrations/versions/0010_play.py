"""Playing against the bots: ``plays``, a person's seat at a match of kind ``play``.

Additive: a new table.  ``matches.kind`` is a plain string column (no native enum), so the new
kind needs no change there.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0010_play"  # created 2026-12-02
down_revision: str | None = "0010_results"

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "plays",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("match_id", sa.Integer(), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("decision", sa.Integer(), nullable=False),
        sa.Column("asked", sa.String(length=8), nullable=True),
        sa.Column("pending", sa.JSON(), nullable=True),
        sa.Column("deadline", TS, nullable=True),
        sa.Column("answer", sa.Integer(), nullable=True),
        sa.Column("missed", sa.Integer(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["match_id"], ["matches.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("match_id"),
    )
    op.create_index("ix_plays_user", "plays", ["user_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_plays_user", table_name="plays")
    op.drop_table("plays")
