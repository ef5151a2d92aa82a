"""Evaluation runs: a version against a fixed pool before it goes live, paired with a baseline.

An author asks for version B (their own, active) against a pool: a ladder's top entries or
named versions, over K slots.  Each slot has a seed, a seat for the subject and the
opponents at the other seats, drawn once from the run's seed (``plan``); B plays every slot
and, when a baseline A is given, A plays the very same slots, so the difference between them
is the bots' own.  The matches are unrated (kind ``evaluation``), held in the database and
admitted by ``workclasses`` as their own work class (slots and a share of the workers, so a
run never delays validations or ladder matches).  A user may start ``evaluations_per_day``
runs and have ``evaluations_unfinished_per_user`` unfinished.

The result (``get``) gives each version's mean place, heads per round, win rate and faults
over its finished matches, and B - A paired and unpaired with 95 % intervals
(``evaluation_stats``).  The owner then promotes B (enters it, or switches its entries, in
ladders) or discards the run (its matches not yet admitted are dropped).  Runs are their
owner's (and the admins'); their matches are public like every match.
"""

from __future__ import annotations

import gzip
import json
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from .. import evaluation_stats as stats
from .. import results, workclasses
from ..models import (
    Agent,
    AgentVersion,
    Evaluation,
    EvaluationDecision,
    Ladder,
    LadderEntry,
    LadderState,
    Match,
    MatchKind,
    MatchLog,
    MatchSeat,
    MatchStatus,
    User,
    VersionStatus,
    utcnow,
)
from ..schemas import (
    ComparisonOut,
    EntryCreate,
    EvaluationCreate,
    EvaluationOut,
    IntervalOut,
    Page,
    SubjectOut,
)
from ..settings import Settings
from . import ladders
from ._errors import Conflict, Forbidden, Invalid, NotFound, TooMany, get
from ._rows import Paging

DEFAULT_DECISION, DEFAULT_BANK = 1.0, 10.0  # the SDK's defaults (cow006.host.Limits)


@dataclass(frozen=True)
class Slot:
    """One slot of a run's plan: its seed, the subject's seat, the opponents by seat."""

    seed: int
    seat: int
    opponents: tuple[int, ...]

    def seats(self, subject: int) -> list[int]:
        out = list(self.opponents)
        out.insert(self.seat, subject)
        return out


def plan(seed: int, pool: Sequence[int], players: int, slots: int) -> list[Slot]:
    """The slots of a run: seeds and opponents drawn from ``seed``, the subject's seat
    rotating over every seat.  The same for the version and its baseline."""
    rng = random.Random(seed)
    out = []
    for i in range(slots):
        match_seed = rng.getrandbits(63)
        if len(pool) > players - 1:
            opponents = rng.sample(list(pool), players - 1)
        else:
            opponents = list(pool)
            rng.shuffle(opponents)
        out.append(Slot(match_seed, i % players, tuple(opponents)))
    return out


def _own_active(session: Session, version_id: int, user: User, what: str) -> AgentVersion:
    version = session.get(AgentVersion, version_id)
    if version is None:
        raise NotFound(f"no such version ({what})")
    agent = session.get(Agent, version.agent_id)
    assert agent is not None
    if agent.owner_id != user.id:
        raise Forbidden(f"the {what} must be a version of one of your agents")
    if version.status is not VersionStatus.active:
        raise Conflict(f"the {what} {version.label} is {version.status.value}, not active")
    if agent.disabled:
        raise Conflict(f"the agent of the {what} is disabled")
    return version


def _pool_of_ladder(session: Session, ladder: Ladder, top: int, exclude_agent: int) -> list[int]:
    """The versions of the ladder's ``top`` entries by conservative rating (the subject's
    own agent left out)."""
    board = ladders.leaderboard(session, ladder.id, Paging(limit=top + 1, offset=0))
    picked = [row.version_id for row in board.items if row.agent_id != exclude_agent]
    return picked[:top]


def _check_pool(session: Session, pool: list[int], user: User, subjects: set[int]) -> None:
    if subjects & set(pool):
        raise Invalid("the pool cannot hold the versions being evaluated")
    rows = session.execute(
        select(AgentVersion.id, AgentVersion.status, Agent.owner_id, Agent.disabled)
        .add_columns(Agent.accepts_challenges, Agent.name, AgentVersion.number)
        .join(Agent, Agent.id == AgentVersion.agent_id)
        .where(AgentVersion.id.in_(pool))
    ).all()
    found = {r.id: r for r in rows}
    for vid in pool:
        row = found.get(vid)
        if row is None:
            raise NotFound(f"no version {vid} for the pool")
        label = f"{row.name}@{row.number}"
        if row.status is not VersionStatus.active or row.disabled:
            raise Conflict(f"{label} cannot play: it is not active")
        if row.owner_id != user.id and not row.accepts_challenges:
            raise Forbidden(f"the owner of {label} does not accept unrated matches with others")


def _caps(session: Session, settings: Settings, user: User, matches: int) -> None:
    if matches > settings.evaluation_matches_max:
        raise Invalid(
            f"a run may play at most {settings.evaluation_matches_max} matches "
            f"(its version's and its baseline's); this one asks for {matches}"
        )
    since = utcnow() - timedelta(days=1)
    today = session.scalar(
        select(func.count(Evaluation.id)).where(
            Evaluation.owner_id == user.id, Evaluation.created_at >= since
        )
    )
    if (today or 0) >= settings.evaluations_per_day:
        raise TooMany(
            f"You may start at most {settings.evaluations_per_day} evaluation runs a day; "
            "try again tomorrow.",
            retry_after=3600,
        )
    unfinished = session.scalar(
        select(func.count(func.distinct(Match.evaluation_id))).where(
            Match.evaluation_id.in_(select(Evaluation.id).where(Evaluation.owner_id == user.id)),
            Match.status.in_([MatchStatus.queued, MatchStatus.running]),
        )
    )
    if (unfinished or 0) >= settings.evaluations_unfinished_per_user:
        raise TooMany(
            f"You have {unfinished} evaluation runs still playing, the most one may have; "
            "start another once one has finished (or discard one).",
            retry_after=60,
        )


def create(
    session: Session, settings: Settings, body: EvaluationCreate, user: User
) -> tuple[EvaluationOut, list[int]]:
    """Start a run (the module says how); the run, and the match ids admitted now."""
    version = _own_active(session, body.version_id, user, "version")
    baseline = (
        _own_active(session, body.baseline_id, user, "baseline")
        if body.baseline_id is not None
        else None
    )
    ladder: Ladder | None = None
    if body.ladder_id is not None:
        ladder = get(session, Ladder, body.ladder_id, "ladder")
        players = int(ladder.players)
        top = body.top or players - 1
        pool = _pool_of_ladder(session, ladder, top, version.agent_id)
    else:
        pool = list(body.pool or [])
        players = body.players or min(len(pool) + 1, 10)
    if body.players is not None and ladder is not None and body.players != players:
        raise Invalid(f"the ladder's tables have {players} seats, not {body.players}")
    if len(pool) < players - 1:
        raise Invalid(
            f"a table of {players} needs at least {players - 1} opponents; the pool has {len(pool)}"
        )
    subjects = {version.id} | ({baseline.id} if baseline is not None else set())
    _check_pool(session, pool, user, subjects)
    _caps(session, settings, user, body.matches * len(subjects))
    seed = body.seed if body.seed is not None else results.new_seed()
    run = Evaluation(
        owner_id=user.id,
        version_id=version.id,
        baseline_id=baseline.id if baseline is not None else None,
        ladder_id=ladder.id if ladder is not None else None,
        pool=pool,
        players=players,
        slots=body.matches,
        seed=seed,
        decision_time=ladder.decision_time if ladder is not None else DEFAULT_DECISION,
        time_bank=ladder.time_bank if ladder is not None else DEFAULT_BANK,
    )
    session.add(run)
    session.flush()
    for i, slot in enumerate(plan(seed, pool, players, body.matches)):
        for subject in (version, baseline):
            if subject is None:
                continue
            match = results.create_match(
                session,
                kind=MatchKind.evaluation,
                version_ids=slot.seats(subject.id),
                rated=False,
                seed=slot.seed,
                requested_by=user.id,
            )
            match.evaluation_id = run.id
            match.evaluation_slot = i
            match.held = True  # admitted by workclasses, as its own work class
    session.commit()
    admitted = workclasses.admit_challenges(session, settings)
    session.commit()
    return get_run(session, run.id, user), admitted


def _owned(session: Session, run_id: int, user: User) -> Evaluation:
    run = get(session, Evaluation, run_id, "evaluation run")
    if run.owner_id != user.id and not user.is_admin:
        # Another user's run: as if there were none (its existence is the owner's business).
        raise NotFound("no such evaluation run")
    return run


def _heads_per_round(body: bytes | None, seat: int, score: int | None) -> float | None:
    if body is None or score is None:
        return None
    log: dict[str, Any] = json.loads(gzip.decompress(body))
    rounds = len(log.get("rounds") or ())
    return score / rounds if rounds else None


@dataclass
class _Sample:
    """One version's finished matches of a run, by slot."""

    place: dict[int, float]
    heads: dict[int, float]
    wins: int = 0
    faults: int = 0


def _samples(session: Session, run: Evaluation, version_id: int) -> _Sample:
    rows = session.execute(
        select(
            Match.evaluation_slot,
            MatchSeat.seat,
            MatchSeat.rank,
            MatchSeat.score,
            MatchSeat.faults,
            MatchLog.body,
        )
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .outerjoin(MatchLog, MatchLog.match_id == Match.id)
        .where(
            Match.evaluation_id == run.id,
            Match.status == MatchStatus.finished,
            MatchSeat.version_id == version_id,
        )
    ).all()
    sample = _Sample({}, {})
    for slot, seat, rank, score, faults, body in rows:
        if rank is None or slot is None:
            continue
        sample.place[slot] = float(rank)
        heads = _heads_per_round(body, seat, score)
        if heads is not None:
            sample.heads[slot] = heads
        sample.wins += rank == 1
        sample.faults += int(faults or 0)
    return sample


def _subject(session: Session, version_id: int, sample: _Sample) -> SubjectOut:
    version = session.get(AgentVersion, version_id)
    assert version is not None
    n = len(sample.place)
    return SubjectOut(
        version_id=version_id,
        label=version.label,
        finished=n,
        mean_place=stats.mean_interval(list(sample.place.values())).mean,
        heads_per_round=stats.mean_interval(list(sample.heads.values())).mean,
        win_rate=sample.wins / n if n else None,
        faults=sample.faults,
    )


def _interval(i: stats.Interval) -> IntervalOut:
    return IntervalOut(mean=i.mean, low=i.low, high=i.high, n=i.n)


def _comparison(b: _Sample, a: _Sample) -> ComparisonOut:
    both = sorted(b.place.keys() & a.place.keys())
    heads = sorted(b.heads.keys() & a.heads.keys())
    return ComparisonOut(
        place=_interval(stats.paired([b.place[s] for s in both], [a.place[s] for s in both])),
        heads_per_round=_interval(
            stats.paired([b.heads[s] for s in heads], [a.heads[s] for s in heads])
        ),
        place_unpaired=_interval(
            stats.unpaired([b.place[s] for s in both], [a.place[s] for s in both])
        ),
        heads_per_round_unpaired=_interval(
            stats.unpaired([b.heads[s] for s in heads], [a.heads[s] for s in heads])
        ),
    )


def _counts(session: Session, run_id: int) -> dict[MatchStatus, int]:
    counts: dict[MatchStatus, int] = defaultdict(int)
    for status, n in session.execute(
        select(Match.status, func.count(Match.id))
        .where(Match.evaluation_id == run_id)
        .group_by(Match.status)
    ):
        counts[MatchStatus(status)] = int(n)
    return counts


def get_run(session: Session, run_id: int, user: User) -> EvaluationOut:
    """A run with its figures so far (its owner's and the admins')."""
    run = _owned(session, run_id, user)
    counts = _counts(session, run.id)
    b = _samples(session, run, run.version_id)
    a = _samples(session, run, run.baseline_id) if run.baseline_id is not None else None
    waiting = counts[MatchStatus.queued] + counts[MatchStatus.running]
    if waiting == 0:
        status = "finished"
    elif counts[MatchStatus.running] or counts[MatchStatus.finished]:
        status = "running"
    else:
        status = "queued"
    return EvaluationOut(
        id=run.id,
        owner_id=run.owner_id,
        ladder_id=run.ladder_id,
        pool=list(run.pool),
        players=run.players,
        matches=run.slots,
        seed=run.seed,
        decision_time=run.decision_time,
        time_bank=run.time_bank,
        status=status,
        queued=counts[MatchStatus.queued],
        running=counts[MatchStatus.running],
        finished=counts[MatchStatus.finished],
        failed=counts[MatchStatus.failed],
        decision=run.decision.value if run.decision is not None else None,
        version=_subject(session, run.version_id, b),
        baseline=_subject(session, run.baseline_id, a) if a and run.baseline_id else None,
        comparison=_comparison(b, a) if a is not None else None,
        created_at=run.created_at,
        decided_at=run.decided_at,
    )


def list_runs(session: Session, user: User, paging: Paging) -> Page[EvaluationOut]:
    """The caller's runs, newest first."""
    mine = select(Evaluation.id).where(Evaluation.owner_id == user.id)
    total = session.scalar(select(func.count()).select_from(mine.subquery())) or 0
    ids = session.scalars(
        mine.order_by(Evaluation.id.desc()).limit(paging.limit).offset(paging.offset)
    ).all()
    items = [get_run(session, run_id, user) for run_id in ids]
    return Page[EvaluationOut](items=items, total=total, limit=paging.limit, offset=paging.offset)


def _undecided(run: Evaluation) -> None:
    if run.decision is not None:
        raise Conflict(f"this run was {run.decision.value} already")


def promote(
    session: Session, run_id: int, user: User, ladder_ids: list[int] | None
) -> EvaluationOut:
    """Enter the run's version in ``ladder_ids`` (default: the run's ladder and every ladder
    its agent is entered in), switching the agent's entries there to it."""
    run = _owned(session, run_id, user)
    _undecided(run)
    version = session.get(AgentVersion, run.version_id)
    assert version is not None
    targets = list(ladder_ids or [])
    if not targets:
        targets = [run.ladder_id] if run.ladder_id is not None else []
        targets += session.scalars(
            select(LadderEntry.ladder_id)
            .join(Ladder, Ladder.id == LadderEntry.ladder_id)
            .where(
                LadderEntry.agent_id == version.agent_id,
                LadderEntry.active.is_(True),
                Ladder.state != LadderState.closed,
            )
        ).all()
        targets = list(dict.fromkeys(targets))
    if not targets:
        raise Conflict("this version's agent is in no ladder: name the ladders to enter")
    for ladder_id in targets:
        # The ladder's own rules (owner, active version, open ladder), one ladder at a time.
        ladders.enter(
            session, ladder_id, EntryCreate(agent_id=version.agent_id, version_id=version.id), user
        )
    run = _owned(session, run_id, user)
    run.decision = EvaluationDecision.promoted
    run.decided_at = utcnow()
    session.commit()
    return get_run(session, run_id, user)


def discard(session: Session, run_id: int, user: User) -> EvaluationOut:
    """Discard the run: its matches not yet admitted are dropped, the version stays staged."""
    run = _owned(session, run_id, user)
    _undecided(run)
    held = select(Match.id).where(
        Match.evaluation_id == run.id,
        Match.status == MatchStatus.queued,
        Match.held.is_(True),
    )
    ids = list(session.scalars(held))
    if ids:
        session.execute(delete(MatchSeat).where(MatchSeat.match_id.in_(ids)))
        session.execute(delete(Match).where(Match.id.in_(ids)))
    run.decision = EvaluationDecision.discarded
    run.decided_at = utcnow()
    session.commit()
    return get_run(session, run_id, user)
