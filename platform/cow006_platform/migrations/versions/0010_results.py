"""Results centred on the reader: a match's number of rounds, and per rating its tallies.

``matches.rounds`` is how many rounds a finished match lasted (a match ends when a total
reaches 66, so it varies).  Each rating (a version in a ladder) keeps, updated when a match
is rated (``ratings.apply_match``): ``tallied`` (its rated matches whose rounds are known),
``heads`` and ``rounds`` over those (the leaderboard's mean heads per round), ``faulted``
(how many of them it faulted in: the fault rate), and ``previous_rank``, its entry's place
on the leaderboard just before its latest match (the rank change).  Additive: matches rated
before this migration have no rounds and are not tallied until the ladder is rerated.
``ix_rating_points_match``: the rating changes of the matches an agent's page lists.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from cow006_platform.migrations import _ops

revision: str = "0010_results"  # created 2026-12-02
down_revision: str | None = "0009"

_TALLIES = ("tallied", "heads", "rounds", "faulted")


def upgrade() -> None:
    _ops.add_columns("matches", sa.Column("rounds", sa.Integer(), nullable=True))
    _ops.add_columns(
        "ratings",
        *(sa.Column(n, sa.Integer(), nullable=False, server_default="0") for n in _TALLIES),
        sa.Column("previous_rank", sa.Integer(), nullable=True),
    )
    op.create_index("ix_rating_points_match", "rating_points", ["match_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_rating_points_match", table_name="rating_points")
    _ops.drop_columns("ratings", "previous_rank", *reversed(_TALLIES))
    _ops.drop_columns("matches", "rounds")
