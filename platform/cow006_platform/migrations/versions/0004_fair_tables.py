"""Fair tables: ladders that allow one owner's versions at one table; secret bot seeds.

``ladders.allow_same_owner`` (false for every existing ladder: matchmaking then never seats two
versions of one owner together).  The secret bot seeds need no column: they are drawn when a
match is played and recorded in its log (``agent_seeds``).
"""

from __future__ import annotations

import sqlalchemy as sa

from cow006_platform.migrations import _ops

revision: str = "0004"  # created 2026-12-01
down_revision: str | None = "0003"

# '0' is false for both SQLite and PostgreSQL booleans.
upgrade, downgrade = _ops.one_column(
    "ladders", "allow_same_owner", sa.Boolean(), server_default="0", nullable=False
)
