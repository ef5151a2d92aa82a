"""The arena's demo content: the built-in bots as agents of a system user, in a demo ladder.

``cow006 serve`` calls ``ensure_demo`` on every start; it is idempotent.  Each built-in is
uploaded like any user's bot, as a two-line ``bot.py`` (``from cow006.bots import make``)
stored through ``storage.store_upload``, so it is validated and sandboxed like any other.
The versions start pending; the caller sends their validations, and the scheduler gives them
matches once they are active.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import ratings, security, storage
from cow006_platform.crud import plays
from cow006_platform.db import session_scope
from cow006_platform.models import (
    Agent,
    AgentVersion,
    Ladder,
    LadderEntry,
    LadderState,
    User,
    VersionStatus,
)
from cow006_platform.settings import Settings
from cow006_platform.storage import add_version

SYSTEM_USER = plays.ARENA_USER
DEMO_LADDER = "demo"
# The built-ins entered, strongest last; ``best`` is an alias of ``montecarlo``.
DEMO_BOTS = ("random", "greedy", "safe", "montecarlo")


def bot_source(name: str) -> str:
    """The ``bot.py`` of a built-in bot (the validation tables' opponents run it too, and
    the matches against the bots: ``cow006_platform.crud.plays``)."""
    return plays.builtin_source(name)


@dataclass
class Demo:
    """The ids ``ensure_demo`` found or made; ``pending`` are the versions to validate."""

    ladder_id: int
    version_ids: list[int] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)


def ensure_demo(
    session_factory: sessionmaker[Session], settings: Settings, bots: tuple[str, ...] = DEMO_BOTS
) -> Demo:
    """Make sure the system user, its built-in agents (one version each) and the demo ladder
    with them entered exist; returns what is there."""
    with session_scope(session_factory) as session:
        user = session.scalar(select(User).where(User.name == SYSTEM_USER))
        if user is None:
            # Its token is thrown away: nobody signs in as the arena itself.
            user, _token = security.create_user(session, SYSTEM_USER)
        ladder = session.scalar(select(Ladder).where(Ladder.name == DEMO_LADDER))
        if ladder is None:
            ladder = Ladder(
                name=DEMO_LADDER,
                state=LadderState.open,
                players=4,
                decision_time=1.0,
                time_bank=10.0,
                draw_probability=ratings.DEFAULT_DRAW_PROBABILITY,
            )
            session.add(ladder)
            session.flush()
        # The built-ins are all the arena's own: its tables must be allowed to seat several
        # of them (a ladder made before the flag existed gets it too).
        ladder.allow_same_owner = True
        demo = Demo(ladder.id)
        for name in bots:
            version = _ensure_bot(session, settings, user.id, name)
            demo.version_ids.append(version.id)
            if version.status is VersionStatus.pending:
                demo.pending.append(version.id)
            entry = session.scalar(
                select(LadderEntry).where(
                    LadderEntry.ladder_id == ladder.id, LadderEntry.agent_id == version.agent_id
                )
            )
            if entry is None:
                session.add(
                    LadderEntry(
                        ladder_id=ladder.id, agent_id=version.agent_id, version_id=version.id
                    )
                )
        return demo


def _ensure_bot(session: Session, settings: Settings, owner_id: int, name: str) -> AgentVersion:
    agent_name = f"builtin-{name}"
    agent = session.scalar(select(Agent).where(Agent.name == agent_name))
    if agent is None:
        agent = Agent(name=agent_name, owner_id=owner_id)
        session.add(agent)
        session.flush()
    stored = storage.store_upload(settings, "bot.py", bot_source(name).encode())
    version = session.scalar(
        select(AgentVersion).where(
            AgentVersion.agent_id == agent.id, AgentVersion.sha256 == stored.sha256
        )
    )
    if version is None:
        version = add_version(session, agent.id, stored)
        session.flush()
    return version
