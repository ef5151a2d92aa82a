"""``cow006 serve``'s event lines (``serve_events.EventFeed``) on a real database: what
happened before the feed started is not reported, each event is reported once, and a bot's
words (a rejection's reason, a match's error) reach the terminal as one bounded printable
line.
"""

from __future__ import annotations

from datetime import timedelta

from helpers import data
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db
from cow006_platform.models import (
    AgentVersion,
    Match,
    MatchKind,
    MatchSeat,
    MatchStatus,
    VersionStatus,
    utcnow,
)
from cow006_workers.serve_events import EventFeed

HOSTILE = "\x1b[2J\x1b]0;owned\x07Traceback (most recent call last):\n  File x\n" + "A" * 5000


def _match(
    session: Session, ladder_id: int | None, versions: list[AgentVersion], **kw: object
) -> int:
    kw.setdefault("kind", MatchKind.ladder)
    match = Match(ladder_id=ladder_id, seed=1, finished_at=utcnow(), **kw)
    session.add(match)
    session.flush()
    for seat, version in enumerate(versions):
        session.add(
            MatchSeat(
                match_id=match.id,
                seat=seat,
                version_id=version.id,
                agent_id=version.agent_id,
                score=10 * (seat + 1),
                rank=seat,
            )
        )
    return match.id


def test_events_since_the_start_once_each_and_cleaned(
    session_factory: sessionmaker[Session],
) -> None:
    with db.session_scope(session_factory) as session:
        lad = data.ladder(session, name="demo")
        old = data.version(session, data.agent(session, name="old"), status=VersionStatus.active)
        old.validated_at = utcnow() - timedelta(minutes=5)
        ladder_id, old_id = lad.id, old.id
    feed = EventFeed(session_factory)
    assert feed.poll() == []  # the version validated before the start is not news

    with db.session_scope(session_factory) as session:
        good = data.version(session, data.agent(session, name="good"), status=VersionStatus.active)
        good.validated_at = utcnow()
        bad = data.version(session, data.agent(session, name="bad"), status=VersionStatus.rejected)
        bad.validated_at, bad.reason = utcnow(), HOSTILE
        old = session.get(AgentVersion, old_id)
        assert old is not None
        played = _match(session, ladder_id, [good, old], status=MatchStatus.finished)
        failed = _match(session, ladder_id, [good], status=MatchStatus.failed, error=HOSTILE)
        good_id = good.id

    lines = feed.poll()
    assert lines[0] == "version good@1 validated"
    assert lines[1].startswith("version bad@1 rejected: ?[2J?]0;owned?Traceback")
    assert lines[2] == f"match {played} finished (demo ladder): good@1 10, old@1 20"
    assert lines[3].startswith(f"match {failed} failed (demo ladder): ?[2J")
    assert len(lines) == 4
    for line in lines:
        assert line.isprintable() and len(line) < 220, line
    assert feed.poll() == []  # once each

    with db.session_scope(session_factory) as session:
        good = session.get(AgentVersion, good_id)
        assert good is not None
        kinds = {
            kind: _match(session, None, [good], status=MatchStatus.finished, kind=kind)
            for kind in (MatchKind.validation, MatchKind.play, MatchKind.challenge)
        }
    lines = feed.poll()
    assert lines == [f"match {kinds[k]} finished ({k}): good@1 10" for k in kinds]
    for line in lines:
        assert line.isprintable() and len(line) < 220, line
    assert feed.poll() == []  # once each
