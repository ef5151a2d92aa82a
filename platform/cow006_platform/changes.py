"""The change feed: every commit that changes public data says which, as tags in ``changes``.

A tag names a slice of what the read API shows: ``agent:7`` (agent 7's page, its rating
history, its list of matches), ``ladder:2`` (that ladder and its leaderboard), ``match:31``
(one match and its log), ``matches`` (every list of matches), ``leagues``, ``league:3``, and
``*`` (everything: rare writes such as a renamed user, or bulk statements whose rows are not
known).  ``track_changes`` hooks a session factory: the objects each flush wrote are turned
into tags, and the tags are inserted in the same transaction just before it commits, so the
feed never announces a change that rolled back and never misses one that committed.

The API processes read the feed (``cache.PublicCache``) to drop cached answers; a process
also hears its own commits at once through ``subscribe`` (a user sees their own write).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete, event, insert, select
from sqlalchemy.orm import ORMExecuteState, Session, sessionmaker

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
_COMMITTING = "cow006_committing"

_listeners: list[Callable[[set[int], set[str]], None]] = []
_listeners_lock = threading.Lock()


def tags_of(obj: object) -> set[str]:
    """The tags of what changes when ``obj`` is inserted, updated or deleted."""
    if isinstance(obj, MatchSeat):
        return {f"agent:{obj.agent_id}", f"match:{obj.match_id}", MATCHES}
    if isinstance(obj, Match):
        # Not the ladder's tag: its pages show ratings (Rating rows), not match states.
        tags = {f"match:{obj.id}", MATCHES}
        if obj.league_id is not None:
            tags.add(f"league:{obj.league_id}")
        return tags
    if isinstance(obj, MatchLog):
        return {f"match:{obj.match_id}"}
    if isinstance(obj, Rating | RatingPoint):
        # The seats of the same match carry the agents' tags; a rerate is a bulk statement.
        return {f"ladder:{obj.ladder_id}"}
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
    for obj in (*session.new, *session.dirty, *session.deleted):
        if isinstance(obj, Match) and obj in session.dirty and not session.is_modified(obj):
            continue  # loaded and touched, nothing written
        if isinstance(obj, Match):
            seats = obj.__dict__.get("seats")
            if seats is not None:  # loaded (or just made): its agents are known
                tags.update(f"agent:{s.agent_id}" for s in seats)
            else:
                matches.add(obj.id)  # its seats' agents are read at commit
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
    if matches and EVERYTHING not in tags:
        # A match's status shows on its agents' lists of matches: tag those agents.
        agents = session.scalars(
            select(MatchSeat.agent_id).where(MatchSeat.match_id.in_(sorted(matches))).distinct()
        )
        tags |= {f"agent:{a}" for a in agents}
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
