"""Web sessions: a browser signed in with a cookie instead of a token in ``localStorage``.

``web_sessions`` holds the sha256 of each session cookie's secret, its user, the API token it
was opened with (so revoking the token ends the session) and its expiry.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0009"  # created 2026-12-02
down_revision: str | None = "0008"

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("token_id", sa.Integer(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["token_id"], ["api_tokens.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("hash"),
    )
    op.create_index("ix_web_sessions_user", "web_sessions", ["user_id"])
    op.create_index("ix_web_sessions_expires", "web_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_web_sessions_expires", table_name="web_sessions")
    op.drop_index("ix_web_sessions_user", table_name="web_sessions")
    op.drop_table("web_sessions")
