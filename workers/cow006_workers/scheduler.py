"""The scheduler and the reaper: what keeps matches flowing, from the database's point of view.

``refill_ladder`` tops one open ladder's queue up to ``ladder_queue_depth`` matches queued or
running, with the tables ``matchmaking.plan_matches`` picks from the ladder's active entries
(each entry's active version, its rating, games, last match and matches in flight).  A
version that has neither played nor been queued yet (a new entry, a version switch) gets its
placement match even when the queue is full: a newcomer waits for nothing.  The ladder row is
locked while the queue is counted and filled, so two refills (the beat's tick, a worker that
just finished a match of the ladder) never overfill it.  A suspended version
(``cow006_platform.suspension``: its matches kept failing) is left out, and a version's failed
matches in a row count as matches it has queued, so it is never placed as a newcomer.

``schedule_tick`` (the beat's ``cow006.schedule``) refills every open ladder and starts the
next round of every running league whose current round is settled (``advance_league``; a
backstop: the worker that settles a league's last match of a round starts the next one
itself).

``reap`` (the beat's ``cow006.reap``) sends again what was dropped: a running match whose lease
ran out (its worker died) goes back to queued; a queued match whose task may have been lost
(the broker restarted empty) is sent again once it waited ``requeue_seconds``; so is a
version still pending validation (about once per ``requeue_seconds``).  For a queued match,
``lease_expires_at`` holds when its task is due to be sent again: the reaper sends each lost
task once per ``requeue_seconds``, not once per tick.  A duplicate task is harmless: the
lease lets one run play a match, the fencing token lets one result count, and
``finish_match`` rates a match once.

Every function works in its own transactions and returns the ids to send; the caller sends
the tasks after the commit (a task must never reach a worker before its row is visible).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import changes, leagues, locks, results, workclasses
from cow006_platform.crud.ladders import entries_query
from cow006_platform.db import aware, session_scope
from cow006_platform.models import (
    Agent,
    AgentVersion,
    Ladder,
    LadderEntry,
    LadderState,
    League,
    LeagueState,
    Match,
    MatchKind,
    MatchSeat,
    MatchStatus,
    Rating,
    VersionStatus,
    utcnow,
)
from cow006_platform.settings import Settings

from .matchmaking import Candidate, plan_matches

logger = logging.getLogger(__name__)

IN_FLIGHT = (MatchStatus.queued, MatchStatus.running)
REAP_BATCH = 500  # rows per reaper pass: a huge backlog is worked through tick by tick


@dataclass
class Work:
    """What a scheduler or reaper pass created or found: the tasks to send after commit."""

    matches: list[int] = field(default_factory=list)
    validations: list[int] = field(default_factory=list)

    def extend(self, other: Work) -> None:
        self.matches += other.matches
        self.validations += other.validations


def _epoch(moment: datetime | None) -> float | None:
    moment = aware(moment)
    return moment.timestamp() if moment is not None else None


def ladder_candidates(session: Session, ladder: Ladder) -> list[Candidate]:
    """The ladder's active entries, as matchmaking sees them (rating, games, in flight)."""
    # The one query of entries with their current rating (crud.ladders), narrowed to the
    # entries matchmaking may seat.
    rows = session.execute(
        entries_query(Rating.last_played_at, AgentVersion.consecutive_failures, ladder=ladder)
        .where(
            LadderEntry.ladder_id == ladder.id,
            LadderEntry.active.is_(True),
            Agent.disabled.is_(False),
            AgentVersion.status == VersionStatus.active,
            # A version whose matches keep failing is out of the tables (suspension).
            AgentVersion.suspended_at.is_(None),
        )
        .order_by(LadderEntry.version_id)
    ).all()
    queued = dict(
        session.execute(
            select(MatchSeat.version_id, func.count())
            .join(Match, Match.id == MatchSeat.match_id)
            .where(Match.ladder_id == ladder.id, Match.status.in_(IN_FLIGHT))
            .group_by(MatchSeat.version_id)
        ).all()
    )
    return [
        Candidate(
            version_id=row.version_id,
            agent_id=row.agent_id,
            owner_id=row.owner_id,
            mu=row.mu,
            sigma=row.sigma,
            games=row.matches,
            last_played=_epoch(row.last_played_at),
            # Failed matches in a row count as matches still queued: a version whose matches
            # fail is no newcomer to place first (it has no game) and is picked less often.
            queued=int(queued.get(row.version_id, 0)) + int(row.consecutive_failures or 0),
        )
        for row in rows
    ]


def _in_flight(session: Session, ladder_id: int) -> int:
    return int(
        session.scalar(
            select(func.count(Match.id)).where(
                Match.ladder_id == ladder_id,
                Match.kind == MatchKind.ladder,
                Match.status.in_(IN_FLIGHT),
            )
        )
        or 0
    )


def refill_ladder(
    session_factory: sessionmaker[Session],
    ladder_id: int,
    depth: int,
    rng: random.Random | None = None,
    *,
    min_batch: int = 1,
) -> list[int]:
    """Top the ladder's queue up to ``depth`` matches in flight (see the module); the ids of
    the matches created, committed, to be sent.

    With ``min_batch`` > 1 (a worker after each match) nothing is done until that many
    matches are missing: refills come in batches, each paying the ladder's lock and the
    candidates' query once for several matches (newcomers then wait for the beat's tick).
    """
    if min_batch > 1:
        with session_scope(session_factory) as session:  # a count, without the lock
            if not refill_due(session, ladder_id, depth, min_batch):
                return []
    with session_scope(session_factory) as session:
        return fill_ladder(session, ladder_id, depth, rng)


def refill_due(session: Session, ladder_id: int, depth: int, min_batch: int) -> bool:
    """Whether at least ``min_batch`` of the ladder's ``depth`` matches in flight are missing
    (counted without the ladder's lock: ``fill_ladder`` counts again under it)."""
    return depth - _in_flight(session, ladder_id) >= min_batch


def fill_ladder(
    session: Session, ladder_id: int, depth: int, rng: random.Random | None = None
) -> list[int]:
    """``refill_ladder``'s work in the caller's transaction, under the ladder's lock: the ids
    of the matches created, to be sent once the caller has committed."""
    rng = rng or random.Random()
    ladder = locks.lock(session, Ladder, ladder_id)
    if ladder is None or ladder.state is not LadderState.open:
        return []
    in_flight = _in_flight(session, ladder.id)
    candidates = ladder_candidates(session, ladder)
    tables = plan_matches(
        candidates,
        ladder.players,
        max(0, depth - int(in_flight or 0)),
        rng,
        utcnow().timestamp(),
        # One owner's versions share a table only where the ladder allows it (collusion).
        distinct_owners=not ladder.allow_same_owner,
        place_newcomers=True,
    )
    if not tables:
        return []
    # The seated versions in one query: ``create_match`` then finds each in the session's
    # identity map, which keeps an object only while something refers to it (this list).
    seated = {c.version_id for table in tables for c in table}
    versions = session.scalars(select(AgentVersion).where(AgentVersion.id.in_(seated))).all()
    created = [
        results.create_match(
            session,
            kind=MatchKind.ladder,
            version_ids=[c.version_id for c in table],
            ladder_id=ladder.id,
        ).id
        for table in tables
    ]
    del versions
    logger.info("ladder %s: %d matches queued", ladder_id, len(created))
    return created


def advance_league(session_factory: sessionmaker[Session], league_id: int) -> list[int]:
    """Start the league's next round if its current one is settled (after the last round:
    mark it finished); the ids of the matches created, committed, to be sent."""
    with session_scope(session_factory) as session:
        league = session.get(League, league_id)
        if league is None:
            return []
        matches = leagues.start_league(session, league)
        leagues.refresh_league_state(session, league)
        return [m.id for m in matches]


def advance_leagues(session_factory: sessionmaker[Session]) -> list[int]:
    """Start the next round of every running league whose current round is settled."""
    with session_scope(session_factory) as session:
        ids = session.scalars(select(League.id).where(League.state == LeagueState.running)).all()
    created: list[int] = []
    for league_id in ids:
        try:
            created += advance_league(session_factory, league_id)
        except Exception:  # one broken league must not stop the others
            logger.exception("league %s: cannot start its next round", league_id)
    return created


def schedule_tick(
    session_factory: sessionmaker[Session], settings: Settings, rng: random.Random | None = None
) -> Work:
    """One scheduler pass: refill every open ladder, advance the running leagues."""
    with session_scope(session_factory) as session:
        ladder_ids = session.scalars(
            select(Ladder.id).where(Ladder.state == LadderState.open).order_by(Ladder.id)
        ).all()
    work = Work()
    for ladder_id in ladder_ids:
        try:
            work.matches += refill_ladder(
                session_factory, ladder_id, settings.ladder_queue_depth, rng
            )
        except Exception:  # one ladder's problem must not stop the others
            logger.exception("ladder %s: cannot refill its queue", ladder_id)
    work.matches += advance_leagues(session_factory)
    try:  # the backstop of the admissions after each match (workclasses)
        work.matches += workclasses.release_challenges(session_factory, settings)
    except Exception:
        logger.exception("cannot admit held challenges")
    return work


def reap(session_factory: sessionmaker[Session], settings: Settings) -> Work:
    """One reaper pass (see the module): the matches and validations to send again."""
    now = utcnow()
    requeue = timedelta(seconds=settings.requeue_seconds)
    work = Work()
    with session_scope(session_factory) as session:
        changes.prune(session)  # the change feed: the API processes need only its tail
        expired = session.scalars(
            select(Match.id)
            .where(
                Match.status == MatchStatus.running,
                or_(Match.lease_expires_at.is_(None), Match.lease_expires_at < now),
            )
            .order_by(Match.id)
            .limit(REAP_BATCH)
        ).all()
        stale = session.scalars(
            select(Match.id)
            .where(
                Match.status == MatchStatus.queued,
                # A held challenge is in no queue yet: workclasses admits it, not the reaper.
                Match.held.is_(False),
                or_(
                    Match.lease_expires_at < now,
                    and_(Match.lease_expires_at.is_(None), Match.created_at < now - requeue),
                ),
            )
            .order_by(Match.id)
            .limit(REAP_BATCH)
        ).all()
        pending = session.execute(
            select(AgentVersion.id, AgentVersion.created_at)
            .where(
                AgentVersion.status == VersionStatus.pending,
                AgentVersion.created_at < now - requeue,
            )
            .order_by(AgentVersion.id)
            .limit(REAP_BATCH)
        ).all()
    for match_id in (*expired, *stale):
        # Each in its own short transaction, under the row lock, checked again: a worker may
        # have renewed or finished it since the list was read.
        with session_scope(session_factory) as session:
            match = locks.lock(session, Match, match_id)
            if match is None:
                continue
            now = utcnow()
            expires = aware(match.lease_expires_at)
            if match.status is MatchStatus.running:
                if expires is not None and expires >= now:
                    continue
                logger.warning(
                    "match %s: the lease of %s (attempt %s) ran out; queued again",
                    match_id,
                    match.worker,
                    match.attempts,
                )
                match.status = MatchStatus.queued
            elif match.status is MatchStatus.queued:
                if match.held:
                    continue
                due = expires or (aware(match.created_at) or now) + requeue
                if due >= now:
                    continue
                logger.info("match %s: queued for a while; its task is sent again", match_id)
            else:
                continue
            match.lease_expires_at = now + requeue
            work.matches.append(match_id)
    for version_id, created_at in pending:
        # No column says when a validation was last sent; a pending version is sent again
        # each time its age crosses a multiple of ``requeue_seconds`` (the pass that sees the
        # crossing sends it: about once per interval, with no state to keep).
        age = (now - (aware(created_at) or now)).total_seconds()
        crossed = int(age // settings.requeue_seconds) != int(
            max(0.0, age - settings.reaper_period) // settings.requeue_seconds
        )
        if crossed:
            work.validations.append(version_id)
    return work
