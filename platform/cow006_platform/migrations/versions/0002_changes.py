"""The change feed: ``changes``, the tags of public data each commit changed."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"  # created 2026-11-30
down_revision: str | None = "0001"


def upgrade() -> None:
    op.create_table(
        "changes",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("tag", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    op.drop_table("changes")
