"""Helpers of the data-layer tests: rows made directly in the database, and real match logs."""

from __future__ import annotations

import hashlib
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session, sessionmaker

from cow006 import bots, play_match
from cow006_platform import db, results
from cow006_platform.models import (
    Agent,
    AgentVersion,
    Ladder,
    League,
    LeagueEntrant,
    Match,
    MatchKind,
    MatchLog,
    MatchSeat,
    MatchStatus,
    User,
    VersionStatus,
)

_n = itertools.count(1)


def user(session: Session, name: str | None = None) -> User:
    n = next(_n)
    row = User(name=name or f"user{n}", token_hash=hashlib.sha256(f"t{n}".encode()).hexdigest())
    session.add(row)
    session.flush()
    return row


def agent(session: Session, owner: User | None = None, name: str | None = None) -> Agent:
    owner = owner or user(session)
    row = Agent(owner_id=owner.id, name=name or f"agent{next(_n)}")
    session.add(row)
    session.flush()
    return row


def version(
    session: Session,
    ag: Agent | None = None,
    sha256: str | None = None,
    status: VersionStatus | None = None,
) -> AgentVersion:
    """A version row (its files are not stored: use storage.store_upload for that), of the
    model's default status unless ``status`` is given."""
    ag = ag or agent(session)
    number = len(ag.versions) + 1
    row = AgentVersion(
        agent_id=ag.id,
        number=number,
        sha256=sha256 or hashlib.sha256(f"v{next(_n)}".encode()).hexdigest(),
        filename="bot.py",
        size=10,
        unpacked_size=10,
        files=1,
    )
    if status is not None:
        row.status = status
    session.add(row)
    session.flush()
    session.refresh(ag)
    return row


def ladder(session: Session, **kwargs: Any) -> Ladder:
    row = Ladder(name=kwargs.pop("name", f"ladder{next(_n)}"), **kwargs)
    session.add(row)
    session.flush()
    return row


def league(session: Session, version_ids: list[int], **kwargs: Any) -> League:
    row = League(name=kwargs.pop("name", f"league{next(_n)}"), **kwargs)
    session.add(row)
    session.flush()
    for vid in version_ids:
        session.add(LeagueEntrant(league_id=row.id, version_id=vid))
    session.flush()
    session.refresh(row)
    return row


def versions(factory: sessionmaker[Session], n: int) -> list[int]:
    """n versions of n distinct agents, committed; their ids."""
    with db.session_scope(factory) as session:
        return [version(session).id for _ in range(n)]


def log_for(match: Match, builtin: str | list[str] = "random") -> dict[str, Any]:
    """A real log of the match's seats, played by built-ins with the match's seed."""
    names = [builtin] * len(match.seats) if isinstance(builtin, str) else builtin
    labels = [f"seat{s.seat}" for s in sorted(match.seats, key=lambda s: s.seat)]
    return play_match([bots.make(n) for n in names], seed=match.seed, names=labels)


def play_and_finish(
    factory: sessionmaker[Session], match_id: int, builtin: str | list[str] = "random"
) -> bool:
    """Play a queued match with built-ins and store its result, as a worker would."""
    with db.session_scope(factory) as session:
        match = session.get(Match, match_id)
        assert match is not None
        log = log_for(match, builtin)
    with db.session_scope(factory) as session:
        return results.finish_match(session, match_id, log, [None] * len(log["players"]))


def finished_matches(
    factory: sessionmaker[Session],
    ladder_id: int,
    version_ids: list[int],
    n: int,
    distinct: int = 50,
) -> list[int]:
    """``n`` finished ladder matches of ``version_ids`` with real logs, inserted in bulk (as
    many rows as a busy ladder holds, in seconds): ``distinct`` matches are played by random
    built-ins and their logs reused in turn.  Their ids, oldest first."""
    with db.session_scope(factory) as session:
        agent_of = {
            v.id: v.agent_id
            for v in session.query(AgentVersion).filter(AgentVersion.id.in_(version_ids))
        }
    names = [f"v{v}" for v in version_ids]
    logs = [
        play_match([bots.make("random") for _ in version_ids], seed=seed, names=names)
        for seed in range(distinct)
    ]
    bodies = [results.compress_log(log) for log in logs]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with db.session_scope(factory) as session:
        rows = [
            {
                "kind": MatchKind.ladder,
                "ladder_id": ladder_id,
                "rated": True,
                "seed": logs[i % distinct]["seed"],
                "status": MatchStatus.finished,
                "rating_applied": True,
                "scores": logs[i % distinct]["scores"],
                "ranks": logs[i % distinct]["ranks"],
                "faults": [],
                "attempts": 1,
                "created_at": start + timedelta(seconds=i),
                "started_at": start + timedelta(seconds=i),
                "finished_at": start + timedelta(seconds=i + 1),
            }
            for i in range(n)
        ]
        ids = list(session.scalars(insert(Match).returning(Match.id), rows))
        ids.sort()
        session.execute(
            insert(MatchLog),
            [{"match_id": mid, "body": bodies[i % distinct]} for i, mid in enumerate(ids)],
        )
        session.execute(
            insert(MatchSeat),
            [
                {
                    "match_id": mid,
                    "seat": seat,
                    "version_id": vid,
                    "agent_id": agent_of[vid],
                    "score": logs[i % distinct]["scores"][seat],
                    "rank": logs[i % distinct]["ranks"][seat],
                    "faults": 0,
                    "forfeited": False,
                }
                for i, mid in enumerate(ids)
                for seat, vid in enumerate(version_ids)
            ],
        )
    return ids
