"""Ladder limits: the CPU share each bot of a ladder's matches gets in its sandbox slot.

``ladders.cpu_share``: cores of CPU time per bot (the slot cgroup's quota; 1.0, one core,
for the ladders that exist).
"""

from __future__ import annotations

import sqlalchemy as sa

from cow006_platform.migrations import _ops

revision: str = "0007"  # created 2026-12-01
down_revision: str | None = "0006"

upgrade, downgrade = _ops.one_column(
    "ladders", "cpu_share", sa.Float(), server_default="1.0", nullable=False
)
