"""Work classes: the admission of challenges, and the caps on asking.

The arena's work comes in four classes, each with a Celery queue of its own
(``tasknames``), so that a flood in one never waits in line in front of another:

=====================  =======================================  ============================
queue                  work                                     sent by
=====================  =======================================  ============================
``cow006.validate``    validations of new versions              the API, the reaper
``cow006.ladder``      ladder and league matches                the scheduler, the workers,
                                                                the API (a league's start)
``cow006.challenge``   challenges                               ``release_challenges``
``cow006.evaluate``    the matches of evaluation runs           ``release_challenges``
=====================  =======================================  ============================

A worker reads its queues in turn (on Redis, kombu's round robin keeps a queue it found empty
first in line; the embedded broker rotates), one task per pool process at a time
(``prefetch_multiplier = 1`` and ``acks_late``), so a validation or a ladder match waits for
about the match each pool process is playing.

**Admission of challenges.**  The database is the source of truth for queued matches, so a
challenge is created *held* (``Match.held``): queued in the database, not yet in the broker.
``release_challenges`` admits held challenges, oldest first, while

* fewer than ``challenge_slots`` admitted challenges are unfinished (in the broker or being
  played): however many are asked for and however slow their bots, challenges never hold
  more of the workers than that; and
* when ladder or league matches are waiting, challenges were less than ``challenge_share`` of
  the last ``SHARE_MATCHES`` matches started, by time (running matches included) and by
  number (``challenge_share``): the ladder keeps the rest.  With no other match waiting,
  challenges have the workers to themselves (up to the slots).

The matches of evaluation runs (``crud.evaluations``) are held and admitted the same way, as
a class of their own: ``evaluation_slots`` and ``evaluation_share``, counted apart from the
challenges' (neither class counts as waiting work against the other).

It runs after a challenge is created (the API), after every match a worker (or an embedded
executor: ``cow006_workers.embedded``) settles, and at every scheduler tick (the backstop).
The reaper never sends a held challenge.

**Caps on asking** (``challenge_refusal``, ``upload_refusal``): per user and per client
address (``throttle.client_address``: an IPv6 one as its /64; behind a proxy, see
docs/operations.md), in the hour or day and as unfinished challenges, in all, and per
opponent: a version of another owner is seated in at most ``challenges_per_opponent``
unfinished challenges, and an agent whose owner said so (``Agent.accepts_challenges``) is
seated in nobody else's.  Each refusal is one sentence and the seconds after which asking
again may succeed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, func, select, text, update
from sqlalchemy.orm import Session, sessionmaker

from . import locks
from .db import aware, session_scope
from .models import (
    Agent,
    AgentVersion,
    Match,
    MatchKind,
    MatchSeat,
    MatchStatus,
    utcnow,
    version_label,
)
from .settings import Settings

SHARE_MATCHES = 20  # the latest matches started, over which the challenges' share is measured
IN_FLIGHT = (MatchStatus.queued, MatchStatus.running)
# A constant key for PostgreSQL's transaction-level advisory lock around admissions.
_ADMISSION_LOCK = 0x636F7730_06C1


# -- admission ----------------------------------------------------------------------------------


def challenge_share(
    session: Session,
    now: datetime,
    last: int = SHARE_MATCHES,
    kind: MatchKind = MatchKind.challenge,
) -> float:
    """The share of ``kind`` (challenges, or evaluation runs' matches) of the ``last``
    matches started (0 when none was): of their
    time (running ones counted up to ``now``), or of their number if that is more.  Time,
    because a slow bot's challenge holds a worker long; number, because every match also
    costs a fixed part outside its time (claiming, storing, rating, starting the bots).  A
    count of matches rather than a span of time: a quiet spell is no credit to spend on a
    burst of challenges later."""
    rows = session.execute(
        select(Match.kind, Match.started_at, Match.finished_at, Match.status)
        .where(Match.started_at.is_not(None))
        .order_by(Match.started_at.desc())
        .limit(last)
    ).all()
    busy = {True: 0.0, False: 0.0}
    count = {True: 0, False: 0}
    for match_kind, started, finished, state in rows:
        start = aware(started)
        if start is None:
            continue
        end = now if state is MatchStatus.running else (aware(finished) or start)
        counted = match_kind is kind
        busy[counted] += max(0.0, (min(end, now) - start).total_seconds())
        count[counted] += 1
    total, matches = busy[True] + busy[False], count[True] + count[False]
    by_time = busy[True] / total if total > 0 else 0.0
    by_count = count[True] / matches if matches else 0.0
    return max(by_time, by_count)


def _serialize(session: Session, held_id: int) -> None:
    """One admission at a time, arena-wide, for the rest of this transaction."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADMISSION_LOCK})
    else:  # SQLite: a write to any row takes the database's write lock
        locks.lock(session, Match, held_id)


def admit_challenges(session: Session, settings: Settings) -> list[int]:
    """Admit the held matches that may go now (see the module): challenges, then evaluation
    runs' matches, each class within its slots and share.  The ids, marked released in
    ``session``, to be sent once the caller has committed."""
    first = session.scalar(
        select(Match.id)
        .where(Match.status == MatchStatus.queued, Match.held.is_(True))
        .order_by(Match.id)
        .limit(1)
    )
    if first is None:
        return []
    _serialize(session, first)
    now = utcnow()
    classes = (
        (MatchKind.challenge, settings.challenge_slots, settings.challenge_share),
        (MatchKind.evaluation, settings.evaluation_slots, settings.evaluation_share),
    )
    ids: list[int] = []
    for kind, slots, share in classes:
        ids += _admit(session, settings, now, kind, slots, share)
    return ids


def _admit(
    session: Session,
    settings: Settings,
    now: datetime,
    kind: MatchKind,
    slots: int,
    share: float,
) -> list[int]:
    """Admit held matches of ``kind``, oldest first, within its slots and its share."""
    admitted = int(
        session.scalar(
            select(func.count(Match.id)).where(
                Match.status.in_(IN_FLIGHT),
                Match.kind == kind,
                Match.held.is_(False),
            )
        )
        or 0
    )
    free = slots - admitted
    if free <= 0:
        return []
    # Only the arena's own classes (ladder, league) are protected from a held class: the
    # held classes do not count as waiting work against each other.
    others_wait = (
        session.scalar(
            select(Match.id)
            .where(
                Match.status == MatchStatus.queued,
                Match.kind.in_([MatchKind.ladder, MatchKind.league]),
            )
            .limit(1)
        )
        is not None
    )
    if others_wait:
        if challenge_share(session, now, kind=kind) >= share:
            return []
        free = 1  # one at a time while the share is measured against waiting work
    ids = list(
        session.scalars(
            select(Match.id)
            .where(Match.status == MatchStatus.queued, Match.held.is_(True), Match.kind == kind)
            .order_by(Match.id)
            .limit(free)
        )
    )
    if ids:
        session.execute(
            update(Match)
            .where(Match.id.in_(ids), Match.held.is_(True))
            # For a queued match: when the reaper sends its task again (if this one is lost).
            .values(held=False, lease_expires_at=now + timedelta(seconds=settings.requeue_seconds))
            .execution_options(synchronize_session=False)
        )
    return ids


def release_challenges(session_factory: sessionmaker[Session], settings: Settings) -> list[int]:
    """``admit_challenges`` in a transaction of its own; the ids, committed, to be sent."""
    with session_scope(session_factory) as session:
        return admit_challenges(session, settings)


# -- caps ---------------------------------------------------------------------------------------


@dataclass
class Refusal:
    """Why a request is refused (one sentence), when asking again may succeed, and the HTTP
    status: 429 for a cap, 403 for an owner who refuses challenges (asking again won't do)."""

    message: str
    retry_after: int | None = None
    status: int = 429


def _retry_after_hour(session: Session, where: list[ColumnElement[bool]], since: datetime) -> int:
    """Seconds until the oldest of the counted requests leaves the hour."""
    oldest = aware(session.scalar(select(func.min(Match.created_at)).where(*where)))
    if oldest is None:
        return 60
    return max(1, int((oldest + timedelta(hours=1) - utcnow()).total_seconds()) + 1)


def _hour_full(session: Session, where: list[ColumnElement[bool]], cap: int) -> bool:
    """Whether the matches ``where`` selects (the last hour's challenges of someone) reach
    ``cap``."""
    return (session.scalar(select(func.count(Match.id)).where(*where)) or 0) >= cap


def challenge_refusal(
    session: Session, settings: Settings, user_id: int, address: str | None
) -> Refusal | None:
    """The first cap a new challenge of ``user_id`` from ``address`` would break, or None
    (whatever it seats: checked before the versions are read, so that a refusal is cheap)."""
    now = utcnow()
    since = now - timedelta(hours=1)
    hourly = [Match.kind == MatchKind.challenge, Match.created_at >= since]
    mine = [*hourly, Match.requested_by == user_id]
    if _hour_full(session, mine, settings.challenges_per_hour):
        return Refusal(
            f"You may ask for at most {settings.challenges_per_hour} challenges an hour; "
            "try again later.",
            _retry_after_hour(session, mine, since),
        )
    here = [*hourly, Match.requested_from == address]
    if address is not None and _hour_full(session, here, settings.challenges_per_hour_per_address):
        return Refusal(
            f"At most {settings.challenges_per_hour_per_address} challenges an hour may be "
            "asked for from one address, whatever the account; try again later.",
            _retry_after_hour(session, here, since),
        )
    # The unfinished challenges: few (the arena-wide cap bounds them), read once; asking
    # again makes sense once one of them has been played.
    wait = 30
    unfinished = session.execute(
        select(Match.id, Match.requested_by, Match.requested_from).where(
            Match.status.in_(IN_FLIGHT), Match.kind == MatchKind.challenge
        )
    ).all()
    if sum(1 for _, by, _ in unfinished if by == user_id) >= settings.challenges_queued_per_user:
        return Refusal(
            f"You have {settings.challenges_queued_per_user} challenges waiting or being "
            "played, the most one may have; ask again once one has finished.",
            wait,
        )
    if address is not None and (
        sum(1 for _, _, where in unfinished if where == address)
        >= settings.challenges_queued_per_address
    ):
        return Refusal(
            f"{settings.challenges_queued_per_address} challenges asked for from this address "
            "are waiting or being played, the most one address may have; ask again once one "
            "has finished.",
            wait,
        )
    if len(unfinished) >= settings.challenges_queued:
        return Refusal(
            f"The arena has {settings.challenges_queued} challenges waiting, as many as it "
            "takes; ask again in a minute.",
            60,
        )
    return None


def opponent_refusal(
    session: Session, settings: Settings, user_id: int, version_ids: list[int]
) -> Refusal | None:
    """Why the versions of other owners in a new challenge of ``user_id`` cannot be seated
    (an owner who refuses challenges, a version in too many unfinished ones), or None."""
    others = session.execute(
        select(AgentVersion.id, Agent.name, AgentVersion.number, Agent.accepts_challenges)
        .join(Agent, Agent.id == AgentVersion.agent_id)
        .where(AgentVersion.id.in_(version_ids), Agent.owner_id != user_id)
        .order_by(AgentVersion.id)
    ).all()
    for _, name, _, accepts in others:
        if not accepts:
            return Refusal(
                f"The owner of {name} does not accept challenges from other users.", status=403
            )
    if not others:
        return None
    unfinished = session.scalars(
        select(Match.id).where(Match.status.in_(IN_FLIGHT), Match.kind == MatchKind.challenge)
    ).all()
    seated: dict[int, int] = {}
    if unfinished:
        seated = dict(
            session.execute(
                select(MatchSeat.version_id, func.count(MatchSeat.id))
                .where(
                    MatchSeat.match_id.in_(list(unfinished)),
                    MatchSeat.version_id.in_([vid for vid, _, _, _ in others]),
                )
                .group_by(MatchSeat.version_id)
            ).all()
        )
    for vid, name, number, _ in others:
        if seated.get(vid, 0) >= settings.challenges_per_opponent:
            return Refusal(
                f"{version_label(name, number)} already has "
                f"{settings.challenges_per_opponent} challenges waiting or being played, the "
                "most one version of another owner may have; ask again once one has finished.",
                30,
            )
    return None


def upload_refusal(session: Session, settings: Settings, address: str | None) -> Refusal | None:
    """The per-address daily upload cap, if a new upload from ``address`` would break it."""
    if address is None:
        return None
    since = utcnow() - timedelta(days=1)
    where = and_(AgentVersion.uploaded_from == address, AgentVersion.created_at >= since)
    count = session.scalar(select(func.count(AgentVersion.id)).where(where)) or 0
    if count < settings.uploads_per_day_per_address:
        return None
    oldest = aware(session.scalar(select(func.min(AgentVersion.created_at)).where(where)))
    retry = (
        max(1, int((oldest + timedelta(days=1) - utcnow()).total_seconds()) + 1)
        if oldest is not None
        else 3600
    )
    return Refusal(
        f"At most {settings.uploads_per_day_per_address} uploads a day may come from one "
        "address, whatever the account; try again later.",
        retry,
    )
