"""A version's validation as its pages and answers show it: its place in the validation queue
(with about how long it will wait) while it is pending, and the match its validation played
once it has a verdict (``MatchKind.validation``, kept by the workers: ``results.store_validation``).

The queue is the pending versions in upload order (the order their tasks were sent; the
reaper sends a stale one again in that order too): a version's place is one more than the
pending versions uploaded before it.  The wait is that place times a validation's recent
duration (the mean of the latest stored validation matches, else ``DEFAULT_SECONDS``): an
estimate, said as "about".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..models import AgentVersion, Match, MatchKind, MatchSeat, MatchStatus, VersionStatus
from ..schemas import as_utc

DEFAULT_SECONDS = 10.0  # a validation's duration before any was measured
RECENT = 20  # validation matches averaged for the estimate
MAX_SECONDS = 600.0  # one run's estimate at most (a long one is not a trend)
MAX_PLACES = 50  # pending versions looked up at once (a page shows a few)


@dataclass(frozen=True)
class QueuePlace:
    """A pending version's place in the validation queue (1: next, or being validated) and
    about how many seconds until its verdict."""

    place: int
    seconds: int


def run_seconds(session: Session) -> float:
    """About how long one validation takes: the mean of the latest validation matches."""
    rows = session.execute(
        select(Match.started_at, Match.finished_at)
        .where(Match.kind == MatchKind.validation, Match.status == MatchStatus.finished)
        .order_by(Match.id.desc())
        .limit(RECENT)
    ).all()
    spans = [
        (as_utc(done) - as_utc(start)).total_seconds()
        for start, done in rows
        if start is not None and done is not None
    ]
    if not spans:
        return DEFAULT_SECONDS
    return min(MAX_SECONDS, max(1.0, sum(spans) / len(spans)))


def queue_places(session: Session, version_ids: Iterable[int]) -> dict[int, QueuePlace]:
    """The place of each pending version of ``version_ids`` (others are left out): one small
    count per version, on the primary key's range."""
    pending = list(
        session.scalars(
            select(AgentVersion.id)
            .where(
                AgentVersion.id.in_(list(version_ids)[:MAX_PLACES]),
                AgentVersion.status == VersionStatus.pending,
            )
            .order_by(AgentVersion.id)
        )
    )
    if not pending:
        return {}
    each = run_seconds(session)
    ahead = session.scalar(
        select(func.count())
        .select_from(AgentVersion)
        .where(AgentVersion.id < pending[0], AgentVersion.status == VersionStatus.pending)
    )
    first = int(ahead or 0) + 1
    # The versions asked about are in upload order too: each is one place further than the
    # one before it plus the pending versions between them.
    out: dict[int, QueuePlace] = {}
    place = first
    previous = pending[0]
    for vid in pending:
        if vid != previous:
            between = session.scalar(
                select(func.count())
                .select_from(AgentVersion)
                .where(
                    AgentVersion.id > previous,
                    AgentVersion.id < vid,
                    AgentVersion.status == VersionStatus.pending,
                )
            )
            place += int(between or 0) + 1
        out[vid] = QueuePlace(place, max(1, round(place * each)))
        previous = vid
    return out


def validation_matches(session: Session, version_ids: Iterable[int]) -> dict[int, int]:
    """The latest validation match of each of ``version_ids`` that has one: its id."""
    ids = list(version_ids)
    if not ids:
        return {}
    rows = session.execute(
        select(MatchSeat.version_id, func.max(Match.id))
        .join(Match, Match.id == MatchSeat.match_id)
        .where(MatchSeat.version_id.in_(ids), Match.kind == MatchKind.validation)
        .group_by(MatchSeat.version_id)
    )
    return {int(vid): int(mid) for vid, mid in rows}
