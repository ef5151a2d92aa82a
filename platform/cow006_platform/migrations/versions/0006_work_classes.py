"""Work classes: challenge rules per owner and queued-work bookkeeping.

* ``agents.accepts_challenges``: the owner may refuse to have the agent seated in other
  users' challenges;
* ``matches.held``: a challenge waiting in the database for admission to the broker;
* ``matches.requested_from`` and ``agent_versions.uploaded_from``: the client address of a
  challenge or an upload, for the per-address caps;
* ``ix_matches_started_at``: the challenges' share of the latest matches started.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from cow006_platform.migrations import _ops

revision: str = "0006"  # created 2026-12-01
down_revision: str | None = "0005"


def upgrade() -> None:
    _ops.add_columns(
        "agents",
        sa.Column("accepts_challenges", sa.Boolean(), nullable=False, server_default=sa.true()),
    )
    _ops.add_columns(
        "agent_versions", sa.Column("uploaded_from", sa.String(length=64), nullable=True)
    )
    _ops.add_columns(
        "matches",
        sa.Column("requested_from", sa.String(length=64), nullable=True),
        sa.Column("held", sa.Boolean(), nullable=False, server_default=sa.false()),
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
    _ops.drop_columns("matches", "held", "requested_from")
    _ops.drop_columns("agent_versions", "uploaded_from")
    _ops.drop_columns("agents", "accepts_challenges")
