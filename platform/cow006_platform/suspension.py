"""Failures a bot may have caused: counted against its version, and a suspension from ladder
tables when they keep coming.

A match can fail for the platform's reasons (no sandbox, files missing, the database away)
or for reasons nobody can pin on one seat (every run of it ended with its worker; an error
while it was played).  A bot must not be able to stall a ladder that way: the scheduler would
seat it again and again (a version with no finished match looks like a newcomer to
matchmaking), and every table it sits at fails.

So every ladder match that fails for a reason that is not the platform's (the callers say
which: ``results.fail_match(..., blame=...)``) counts one failure against each version at its
table, and every ladder match that finishes resets the count of its versions.  A fair version
at a failing table fails once with it and then finishes its other matches; the version that
causes the failures fails every match it plays.  After ``suspend_after`` failures in a row a
version is *suspended*: matchmaking leaves it out of its ladders' tables
(``cow006_workers.scheduler.ladder_candidates``), and its owner reads why on its agent page
and in the API (``suspended_reason``, owner and admins only: the last error may quote the
bot).  A suspension is lifted by an admin (``cow006 admin unsuspend AGENT@N``), and a new
version of the agent starts afresh.  Only ladder matches count: their tables are chosen by
matchmaking, where a challenge's table is chosen by a user (who must not be able to suspend a
fair version by challenging it with a failing bot).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from cow006.untrusted import clean

from .models import AgentVersion, Match, MatchKind, utcnow

MAX_REASON = 2000  # characters of a suspension's reason kept


def counts(match: Match) -> bool:
    """Whether ``match``'s outcome counts for its versions' failure streaks (ladder only)."""
    return match.kind is MatchKind.ladder and match.ladder_id is not None


def _versions(session: Session, match: Match) -> list[AgentVersion]:
    """The match's versions in seat order, each once, read in one query."""
    ids = [seat.version_id for seat in sorted(match.seats, key=lambda s: s.seat)]
    found = {v.id: v for v in session.scalars(select(AgentVersion).where(AgentVersion.id.in_(ids)))}
    return [found[vid] for vid in dict.fromkeys(ids) if vid in found]


def record_finished(session: Session, match: Match) -> None:
    """A ladder match finished: its versions' failure streaks start again from zero."""
    if not counts(match):
        return
    for version in _versions(session, match):
        if version.consecutive_failures:
            version.consecutive_failures = 0


def record_failure(
    session: Session, match: Match, error: str, suspend_after: int
) -> list[AgentVersion]:
    """A ladder match failed for a reason that may be a bot's: one more failure for each of
    its versions; those reaching ``suspend_after`` in a row are suspended (returned)."""
    if not counts(match):
        return []
    suspended = []
    for version in _versions(session, match):
        version.consecutive_failures = (version.consecutive_failures or 0) + 1
        if version.suspended_at is None and version.consecutive_failures >= max(1, suspend_after):
            version.suspended_at = utcnow()
            version.suspended_reason = clean(
                f"Suspended from ladder tables: its last {version.consecutive_failures} ladder "
                f"matches failed (the last, match {match.id}: {error.strip()}). An admin lifts "
                "the suspension (cow006 admin unsuspend); a new version starts afresh.",
                MAX_REASON,
            )
            suspended.append(version)
    return suspended


def lift(version: AgentVersion) -> bool:
    """Lift ``version``'s suspension and clear its failure count; False if it had none."""
    was = version.suspended_at is not None or bool(version.consecutive_failures)
    version.suspended_at = None
    version.suspended_reason = None
    version.consecutive_failures = 0
    return was
