"""The change feed: every commit that changes public data says which, as tags in ``changes``.

A tag names a slice of what the read API shows: ``agent:7`` (agent 7's page, its rating
history, its list of matches: all of them), ``agent:7/matches`` (its list of matches alone:
a seat of it written, the state of a match it plays), ``agent:7/ratings`` (its rating
history alone: a rating point of one of its versions), ``ladder:2`` (that ladder and its
leaderboard), ``match:31`` (one match and its log), ``matches`` (every list of matches),
``leagues``, ``league:3``, and ``*`` (everything: rare writes such as a renamed user, or bulk
statements whose rows are not known).

A rating that moves names only the rows of its ladder's leaderboard it may have moved: a
*board tag* ``ladder:2@LO:HI`` (``board_tag``) says that one entry's sort key (the
conservative rating, ``crud.ladders``) went from one end of ``[LO, HI]`` to the other.  Only
the rows whose keys lie in that interval change rank, so a cached page that shows the keys
``[a, b]`` of that board (``cache.shows``) is dropped only when the two intervals meet; a page
that does not say which keys it shows is dropped by any board tag of its ladder, as by
``ladder:2`` itself.  A finished match moves four entries: it drops the few leaderboard pages
holding them and the rows between their old and new places, not every page of the ladder.

``track_changes`` hooks a session factory: the objects each flush wrote are turned
into tags, and the tags are inserted in the same transaction just before it commits, so the
feed never announces a change that rolled back and never misses one that committed.

The API processes read the feed (``cache.PublicCache``) to drop cached answers; a process
also hears its own commits at once through ``subscribe`` (a user sees their own write).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete, event, insert, inspect, select
from sqlalchemy.orm import ORMExecuteState, Session, sessionmaker
from sqlalchemy.orm.util import identity_key

from . import ratings
from .models import (
    AgentVersion,
    Change,
    Ladder,
    LadderEntry,
    League,
    LeagueEntrant,
    Match,
    MatchLog,
    MatchSeat,
    Rating,
    RatingPoint,
)

EVERYTHING = "*"
MATCHES = "matches"

# Bulk statements that change nothing the API shows: the SQLite row lock (``locks.lock``
# sets ``id = id``), the workers' lease heartbeat and a held challenge's admission.
_INVISIBLE_COLUMNS = frozenset({"id", "lease_expires_at", "worker", "held"})
# Tables no public page shows (tokens, invites, throttling counters): writing them, even in
# bulk (a token's last use, an address's counter), must not drop every cached page.
_PRIVATE_TABLES = frozenset({"api_tokens", "invites", "rate_counters"})

_TAGS = "cow006_change_tags"
_MATCHES = "cow006_changed_matches"
_POINTS = "cow006_rated_versions"
_COMMITTING = "cow006_committing"

# The feed's column holds 64 characters; a board tag is given 6 decimals (rounded outwards).
TAG_LENGTH = 64
_BOARD_DIGITS = 1_000_000

_listeners: list[Callable[[set[int], set[str]], None]] = []
_listeners_lock = threading.Lock()


def matches_of(agent_id: int) -> str:
    """The tag of an agent's list of matches (its seats, their matches' states)."""
    return f"agent:{agent_id}/matches"


def rating_points_of(agent_id: int) -> str:
    """The tag of an agent's rating history (the rating points of its versions)."""
    return f"agent:{agent_id}/ratings"


def board_tag(ladder_id: int, old: float, new: float) -> str:
    """The tag of one leaderboard entry whose sort key went from ``old`` to ``new``: the
    interval between them, widened outwards to 6 decimals (the ladder's tag if it would not
    fit the feed's column)."""
    if not (math.isfinite(old) and math.isfinite(new)):
        return f"ladder:{ladder_id}"
    # One unit more on each side: the product and the printing round, the interval must not.
    lo = (math.floor(min(old, new) * _BOARD_DIGITS) - 1) / _BOARD_DIGITS
    hi = (math.ceil(max(old, new) * _BOARD_DIGITS) + 1) / _BOARD_DIGITS
    tag = f"ladder:{ladder_id}@{lo:.6f}:{hi:.6f}"
    return tag if len(tag) <= TAG_LENGTH else f"ladder:{ladder_id}"


def parse_board_tag(tag: str) -> tuple[str, float, float] | None:
    """``(ladder tag, low, high)`` of a board tag (``board_tag``), None for any other tag."""
    base, at, interval = tag.partition("@")
    if not at:
        return None
    lo, _, hi = interval.partition(":")
    try:
        return base, float(lo), float(hi)
    except ValueError:
        return None


def _rating_tags(session: Session, row: Rating) -> set[str]:
    """A rating written: the interval its leaderboard key moved across (``board_tag``), or
    the whole ladder when the key it had is not known."""
    coarse = {f"ladder:{row.ladder_id}"}
    new = row.conservative
    if new is None or row in session.deleted:
        return coarse
    if row in session.new:
        # Before its first match a version is ranked at the ladder's initial rating.
        ladder = session.identity_map.get(identity_key(Ladder, row.ladder_id))
        if not isinstance(ladder, Ladder):
            return coarse
        old = ratings.conservative(ladder.mu, ladder.sigma)
    else:
        history = inspect(row).attrs.conservative.history
        if history.deleted:
            old = history.deleted[0]
        elif history.unchanged:
            old = history.unchanged[0]
        else:  # set without its value loaded: where it was is not known
            return coarse
        if old is None:
            return coarse
    return {board_tag(row.ladder_id, float(old), float(new))}


def tags_of(obj: object) -> set[str]:
    """The tags of what changes when ``obj`` is inserted, updated or deleted."""
    if isinstance(obj, MatchSeat):
        # Not the agent's page (it shows no match): its list of matches.
        return {matches_of(obj.agent_id), f"match:{obj.match_id}", MATCHES}
    if isinstance(obj, Match):
        # Not the ladder's tag: its pages show ratings (Rating rows), not match states.
        tags = {f"match:{obj.id}", MATCHES}
        if obj.league_id is not None:
            tags.add(f"league:{obj.league_id}")
        return tags
    if isinstance(obj, MatchLog):
        return {f"match:{obj.match_id}"}
    if isinstance(obj, Rating):
        # Shown by its leaderboard alone (no agent page of the API shows current ratings); a
        # rerate is a bulk statement.  ``_after_flush`` narrows it to a board tag.
        return {f"ladder:{obj.ladder_id}"}
    if isinstance(obj, RatingPoint):
        # Shown by its agent's rating history alone: that agent (``rating_points_of``) is
        # looked up by its version at commit (``_after_flush`` notes it).
        return set()
    if isinstance(obj, LadderEntry):
        return {f"ladder:{obj.ladder_id}", f"agent:{obj.agent_id}"}
    if isinstance(obj, AgentVersion):
        return {f"agent:{obj.agent_id}"}
    if isinstance(obj, Ladder):
        return {f"ladder:{obj.id}"}
    if isinstance(obj, League | LeagueEntrant):
        league = obj.id if isinstance(obj, League) else obj.league_id
        return {f"league:{league}", "leagues"}
    if isinstance(obj, Change) or getattr(obj, "__tablename__", None) in _PRIVATE_TABLES:
        return set()
    # Users and agents (names, disabled) show on every leaderboard and match list; anything
    # unknown is treated the same way, to be safe.
    return {EVERYTHING}


def _pending(session: Session) -> set[str]:
    tags: set[str] = session.info.setdefault(_TAGS, set())
    return tags


def _after_flush(session: Session, _context: Any) -> None:
    tags = _pending(session)
    matches: set[int] = session.info.setdefault(_MATCHES, set())
    rated: set[int] = session.info.setdefault(_POINTS, set())
    for obj in (*session.new, *session.dirty, *session.deleted):
        if isinstance(obj, Match) and obj in session.dirty and not session.is_modified(obj):
            continue  # loaded and touched, nothing written
        if isinstance(obj, Match):
            matches.add(obj.id)  # its seats' agents are tagged at commit
        elif isinstance(obj, RatingPoint):
            if obj.version_id is None:  # its agent cannot be found: be safe
                tags.add(EVERYTHING)
            else:
                rated.add(obj.version_id)  # its version's agent is tagged at commit
        if isinstance(obj, Rating):
            tags |= _rating_tags(session, obj)
        else:
            tags |= tags_of(obj)


def _on_execute(state: ORMExecuteState) -> None:
    """Bulk UPDATE/DELETE/INSERT statements: tagged by their table, or ``*``."""
    if not (state.is_update or state.is_delete or state.is_insert):
        return
    table = getattr(state.statement, "table", None)
    if table is not None and (table.name == Change.__tablename__ or table.name in _PRIVATE_TABLES):
        return
    if state.is_update:
        values = getattr(state.statement, "_values", None) or {}
        names = {getattr(k, "key", str(k)) for k in values}
        if names and names <= _INVISIBLE_COLUMNS:
            return
    _pending(state.session).add(EVERYTHING)


def _before_commit(session: Session) -> None:
    session.flush()  # the last objects' tags (after_flush) before they are written
    tags = _pending(session)
    matches = session.info.pop(_MATCHES, set())
    rated = session.info.pop(_POINTS, set())
    if matches and EVERYTHING not in tags:
        # A match's status shows on its agents' lists of matches: tag those lists.
        agents = session.scalars(
            select(MatchSeat.agent_id).where(MatchSeat.match_id.in_(sorted(matches))).distinct()
        )
        tags |= {matches_of(a) for a in agents}
    if rated and EVERYTHING not in tags:
        agents = session.scalars(
            select(AgentVersion.agent_id).where(AgentVersion.id.in_(sorted(rated))).distinct()
        )
        tags |= {rating_points_of(a) for a in agents}
    if EVERYTHING in tags:
        tags.intersection_update({EVERYTHING})
    if tags:
        ids = session.scalars(
            insert(Change).returning(Change.id), [{"tag": t} for t in sorted(tags)]
        ).all()
        session.info[_COMMITTING] = (set(ids), set(tags))
    tags.clear()


def _after_commit(session: Session) -> None:
    committed = session.info.pop(_COMMITTING, None)
    if committed:
        with _listeners_lock:
            listeners = list(_listeners)
        for listener in listeners:
            listener(*committed)


def _after_rollback(session: Session) -> None:
    session.info.pop(_TAGS, None)
    session.info.pop(_MATCHES, None)
    session.info.pop(_POINTS, None)
    session.info.pop(_COMMITTING, None)


def track_changes(factory: sessionmaker[Session]) -> None:
    """Make the sessions of ``factory`` write the change feed when they commit."""
    event.listen(factory, "after_flush", _after_flush)
    event.listen(factory, "do_orm_execute", _on_execute)
    event.listen(factory, "before_commit", _before_commit)
    event.listen(factory, "after_commit", _after_commit)
    event.listen(factory, "after_soft_rollback", lambda s, _t: _after_rollback(s))


def subscribe(listener: Callable[[set[int], set[str]], None]) -> Callable[[], None]:
    """Call ``listener(ids, tags)`` after each commit of this process that wrote feed entries
    (their ids and tags); returns the unsubscriber."""
    with _listeners_lock:
        _listeners.append(listener)

    def unsubscribe() -> None:
        with _listeners_lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return unsubscribe


def read_since(session: Session, after: int, limit: int = 10_000) -> list[tuple[int, str]]:
    """Feed entries with an id above ``after``, oldest first."""
    rows = session.execute(
        select(Change.id, Change.tag).where(Change.id > after).order_by(Change.id).limit(limit)
    )
    return [(int(i), str(t)) for i, t in rows]


def read_ids(session: Session, ids: list[int]) -> list[tuple[int, str]]:
    """The feed entries among ``ids`` that exist now (ids that had not committed before)."""
    rows = session.execute(select(Change.id, Change.tag).where(Change.id.in_(ids)))
    return [(int(i), str(t)) for i, t in rows]


def latest(session: Session) -> int:
    """The newest feed id (0 for an empty feed)."""
    return int(session.scalar(select(Change.id).order_by(Change.id.desc()).limit(1)) or 0)


def prune(session: Session, keep: int = 100_000) -> int:
    """Delete all but the newest ``keep`` entries; the number deleted."""
    newest = latest(session)
    if newest <= keep:
        return 0
    done = session.execute(
        delete(Change)
        .where(Change.id <= newest - keep)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(done, "rowcount", 0) or 0)
