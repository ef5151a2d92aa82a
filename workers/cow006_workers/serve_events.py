"""The one-line events ``cow006 serve`` prints: matches finished or failed, versions validated
or rejected, read from the database it serves.

The children (API, worker, scheduler) log warnings only unless ``--verbose``; what a person
running the arena wants to see goes by here instead, one line each::

    match 12 finished (demo ladder): greedy@1 18, random@1 25, lowest@1 40, highest@1 61
    version mybot@2 rejected: the bot did not answer within 10 s

Polled (``EventFeed.poll``) rather than pushed: the feed needs no broker and no change to the
workers, and it reports what was really committed.  Names and reasons come from uploads:
``clean`` keeps them to one bounded line of printable characters, so a bot cannot write
escape sequences to the operator's terminal.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload, sessionmaker

from cow006_platform.models import (
    Agent,
    AgentVersion,
    Ladder,
    Match,
    MatchSeat,
    MatchStatus,
    VersionStatus,
    version_label,
)

MAX_TEXT = 120  # characters of a reason or an error kept on an event line
BATCH = 50  # rows of each kind read per poll (the rest next time)


def clean(text: str | None, limit: int = MAX_TEXT) -> str:
    """``text`` as one line of printable characters, at most ``limit`` of them."""
    first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    out = "".join(ch if ch.isprintable() else "?" for ch in first)
    return out if len(out) <= limit else out[: limit - 1] + "…"


class _Watermark:
    """Rows already reported: everything before ``since``, and the ids at ``since`` itself
    (several rows may share a timestamp)."""

    def __init__(self, since: datetime | None) -> None:
        self.since = since
        self.at_since: set[int] = set()

    def fresh(self, row_id: int, when: datetime | None) -> bool:
        if when is None:
            return False
        return not (self.since is not None and when == self.since and row_id in self.at_since)

    def saw(self, row_id: int, when: datetime) -> None:
        if self.since is None or when != self.since:
            self.since, self.at_since = when, set()
        self.at_since.add(row_id)


class EventFeed:
    """New events since the feed was made (what happened before is not reported)."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        with sessions() as session:
            self.matches = _Watermark(
                session.scalar(select(Match.finished_at).order_by(Match.finished_at.desc()))
            )
            self.versions = _Watermark(
                session.scalar(
                    select(AgentVersion.validated_at).order_by(AgentVersion.validated_at.desc())
                )
            )
        # Rows at the first watermark were there before: reported as seen.
        with sessions() as session:
            if self.matches.since is not None:
                self.matches.at_since = set(
                    session.scalars(select(Match.id).where(Match.finished_at == self.matches.since))
                )
            if self.versions.since is not None:
                self.versions.at_since = set(
                    session.scalars(
                        select(AgentVersion.id).where(
                            AgentVersion.validated_at == self.versions.since
                        )
                    )
                )

    def poll(self) -> list[str]:
        """The event lines since the last poll, oldest first."""
        with self.sessions() as session:
            return self._versions(session) + self._matches(session)

    def _matches(self, session: Session) -> list[str]:
        query = (
            select(Match)
            .where(Match.status.in_((MatchStatus.finished, MatchStatus.failed)))
            .options(selectinload(Match.seats).selectinload(MatchSeat.version))
            .order_by(Match.finished_at, Match.id)
            .limit(BATCH)
        )
        if self.matches.since is not None:
            query = query.where(Match.finished_at >= self.matches.since)
        lines = []
        for match in session.scalars(query):
            if match.finished_at is None or not self.matches.fresh(match.id, match.finished_at):
                continue
            self.matches.saw(match.id, match.finished_at)
            lines.append(self._match_line(session, match))
        return lines

    def _match_line(self, session: Session, match: Match) -> str:
        # Every match is labelled: a validation or a play would otherwise read as a ladder's.
        where = f" ({match.kind})"
        if match.ladder_id is not None:
            name = session.scalar(select(Ladder.name).where(Ladder.id == match.ladder_id))
            where = f" ({clean(name, 40)} ladder)"
        if match.status is MatchStatus.failed:
            return f"match {match.id} failed{where}: {clean(match.error) or 'no reason given'}"
        names = {
            a.id: a.name
            for a in session.scalars(
                select(Agent).where(Agent.id.in_([s.agent_id for s in match.seats]))
            )
        }
        seats = sorted(match.seats, key=lambda s: (s.rank if s.rank is not None else 99, s.seat))
        scores = ", ".join(
            f"{clean(version_label(names.get(s.agent_id, '?'), s.version.number), 50)} "
            f"{s.score if s.score is not None else '-'}"
            for s in seats
        )
        return f"match {match.id} finished{where}: {scores}"

    def _versions(self, session: Session) -> list[str]:
        query = (
            select(AgentVersion, Agent.name)
            .join(Agent, Agent.id == AgentVersion.agent_id)
            .where(AgentVersion.status.in_((VersionStatus.active, VersionStatus.rejected)))
            .where(AgentVersion.validated_at.is_not(None))
            .order_by(AgentVersion.validated_at, AgentVersion.id)
            .limit(BATCH)
        )
        if self.versions.since is not None:
            query = query.where(AgentVersion.validated_at >= self.versions.since)
        lines = []
        for version, agent in session.execute(query):
            when = version.validated_at
            if when is None or not self.versions.fresh(version.id, when):
                continue
            self.versions.saw(version.id, when)
            label = clean(version_label(agent, version.number), 50)
            if version.status is VersionStatus.active:
                lines.append(f"version {label} validated")
            else:
                lines.append(f"version {label} rejected: {clean(version.reason) or 'no reason'}")
        return lines
