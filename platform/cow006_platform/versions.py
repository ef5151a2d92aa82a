"""Agent versions: the one place a stored upload becomes a numbered, pending version."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from .models import AgentVersion, VersionStatus
from .storage import StoredBot


def add_version(session: Session, agent_id: int, stored: StoredBot) -> AgentVersion:
    """A new pending version of the agent, numbered after its last one (added, not flushed).

    Two concurrent callers may pick the same number: the (agent_id, number) constraint makes
    the later commit fail, which the caller reports.
    """
    last = session.scalar(
        select(func.max(AgentVersion.number)).where(AgentVersion.agent_id == agent_id)
    )
    version = AgentVersion(
        agent_id=agent_id,
        number=(last or 0) + 1,
        sha256=stored.sha256,
        filename=stored.filename,
        size=stored.size,
        unpacked_size=stored.unpacked_size,
        files=stored.files,
        status=VersionStatus.pending,
    )
    session.add(version)
    return version
