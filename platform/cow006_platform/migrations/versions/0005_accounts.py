"""Accounts: named revocable tokens, disabled users, registration by invite or approval.

``api_tokens`` becomes what authenticates: each user's token (its hash, from
``users.token_hash``) is moved there as a token named "default", so every token in use keeps
working.  ``users.token_hash`` stays (SQLite cannot drop a UNIQUE column without rebuilding
``users``, and rebuilding a table that others reference with ON DELETE CASCADE is how data is
lost); it records the token a user was created with.  ``invites`` holds hashed invite codes,
``rate_counters`` the per-address counters of registrations and failed sign-ins.

Downgrade puts each user's newest live token back into ``users.token_hash`` (or, for a user
without one, a hash no token has: a revoked token must not come back to life).
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

from cow006_platform.migrations import _ops

revision: str = "0005"  # created 2026-12-01
down_revision: str | None = "0004"

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    # ADD COLUMN with a default: no table rebuild on SQLite, existing users stay active.
    _ops.add_columns(
        "users",
        sa.Column("disabled", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("pending", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("prefix", sa.String(length=12), nullable=True),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("last_used_at", TS, nullable=True),
        sa.Column("expires_at", TS, nullable=True),
        sa.Column("revoked_at", TS, nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("hash"),
    )
    op.create_index("ix_api_tokens_user", "api_tokens", ["user_id", "id"])
    op.create_table(
        "invites",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=12), nullable=False),
        sa.Column("uses", sa.Integer(), nullable=False),
        sa.Column("uses_left", sa.Integer(), nullable=False),
        sa.Column("note", sa.String(length=200), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("code_hash"),
    )
    op.create_table(
        "rate_counters",
        sa.Column("bucket", sa.String(length=120), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("expires", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("bucket"),
    )
    op.create_index("ix_rate_counters_expires", "rate_counters", ["expires"])
    # Every user's token, as it was, becomes their token "default" (same hash: it keeps working).
    op.execute(
        "INSERT INTO api_tokens (user_id, name, prefix, hash, created_at) "
        "SELECT id, 'default', NULL, token_hash, created_at FROM users"
    )


def downgrade() -> None:
    conn = op.get_bind()
    users = conn.execute(sa.text("SELECT id FROM users")).scalars().all()
    for user_id in users:
        live = conn.execute(
            sa.text(
                "SELECT hash FROM api_tokens WHERE user_id = :u AND revoked_at IS NULL "
                "ORDER BY id DESC"
            ),
            {"u": user_id},
        ).scalars()
        # The newest live token (expiry is not checked: 0004 has no notion of it); else a
        # hash of nothing anyone holds, so a revoked token does not come back.
        newest = next(iter(live), None) or secrets.token_hex(32)
        conn.execute(
            sa.text("UPDATE users SET token_hash = :h WHERE id = :u"), {"h": newest, "u": user_id}
        )
    op.drop_index("ix_rate_counters_expires", table_name="rate_counters")
    op.drop_table("rate_counters")
    op.drop_table("invites")
    op.drop_index("ix_api_tokens_user", table_name="api_tokens")
    op.drop_table("api_tokens")
    # On PostgreSQL this is the statement op.drop_column emits; on SQLite batch mode would
    # rebuild ``users`` and cascade-delete every agent (see _ops).
    _ops.drop_columns("users", "pending", "disabled")
