"""Evaluation runs: a version (and optionally a baseline) against a fixed pool.

* ``evaluations``: one row a run (owner, versions, pool, plan, limits, decision);
* ``matches.evaluation_id`` and ``matches.evaluation_slot``: a run's matches, by slot (the
  same seed, seats and opponents for the version and its baseline).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from cow006_platform.migrations import _ops

revision: str = "0008"  # created 2026-12-02
down_revision: str | None = "0007"


def upgrade() -> None:
    op.create_table(
        "evaluations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("baseline_id", sa.Integer(), nullable=True),
        sa.Column("ladder_id", sa.Integer(), nullable=True),
        sa.Column("pool", sa.JSON(), nullable=False),
        sa.Column("players", sa.Integer(), nullable=False),
        sa.Column("slots", sa.Integer(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("decision_time", sa.Float(), nullable=False),
        sa.Column("time_bank", sa.Float(), nullable=False),
        sa.Column(
            "decision",
            sa.Enum(
                "promoted", "discarded", name="evaluationdecision", native_enum=False, length=16
            ),
            nullable=True,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["baseline_id"], ["agent_versions.id"]),
        sa.ForeignKeyConstraint(["ladder_id"], ["ladders.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"]),
        sa.ForeignKeyConstraint(["version_id"], ["agent_versions.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_evaluations_owner_id", "evaluations", ["owner_id"], unique=False)
    _ops.add_reference("matches", "evaluation_id", "evaluations.id")
    _ops.add_columns("matches", sa.Column("evaluation_slot", sa.Integer(), nullable=True))
    op.create_index(
        "ix_matches_evaluation", "matches", ["evaluation_id", "evaluation_slot"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_matches_evaluation", table_name="matches")
    _ops.drop_columns("matches", "evaluation_slot", "evaluation_id")
    op.drop_index("ix_evaluations_owner_id", table_name="evaluations")
    op.drop_table("evaluations")
