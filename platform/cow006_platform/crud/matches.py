"""Matches of every kind (ladder, league, challenge) with their seats, logs and stderr, and
the challenges users ask for.

Matches and logs are public; a bot's stderr is its owner's business (and the admins').  The
seed of a match not finished yet is shown to admins only (``schemas.MatchOut``, from the
``admin`` context given here): it fixes the deals, so anyone else could compute every hand of
a match being played.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from .. import results, workclasses
from ..models import (
    Agent,
    AgentVersion,
    Ladder,
    Match,
    MatchKind,
    MatchLog,
    MatchSeat,
    MatchStatus,
    User,
    VersionStatus,
)
from ..schemas import ChallengeCreate, MatchOut, Page, StderrOut, as_utc
from ..settings import Settings

if TYPE_CHECKING:
    from ..cache import Fragments
from ._errors import Conflict, Forbidden, NotFound, get, refusal
from ._rows import VERSION_FIELDS, Paging, Query, count, page, page_json, with_version

# What a match's answer shows (not the workers' lease bookkeeping), selected as plain
# columns: a page is built from rows, without loading ORM objects.
MATCH_COLUMNS = [
    c
    for c in Match.__table__.c
    if c.key not in ("worker", "lease_expires_at", "attempts", "rating_applied")
]


class LogRow(NamedTuple):
    """A finished match as the exports write it: its index fields, seats and stored log."""

    id: int
    seed: int
    rated: bool
    finished_at: datetime | None
    scores: list[int] | None
    ranks: list[int] | None
    body: bytes  # the log, gzip-compressed JSON (``results.compress_log``)
    participants: list[dict[str, Any]]


def seats_query(ids: Query | Sequence[int]) -> Query:
    """The seats of the matches ``ids`` (a list, or a query of them) with their version's
    number and label and their agent's name and owner, by match and seat."""
    seats = select(
        MatchSeat.match_id,
        MatchSeat.seat,
        MatchSeat.version_id,
        MatchSeat.agent_id,
        AgentVersion.number,
        *VERSION_FIELDS,
        MatchSeat.score,
        MatchSeat.rank,
        MatchSeat.faults,
        MatchSeat.forfeited,
    )
    return (
        with_version(seats, MatchSeat.version_id)
        .where(MatchSeat.match_id.in_(ids))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    )


def _with_seats(session: Session, matches: Sequence[Any], ids: Any) -> list[dict[str, Any]]:
    """Match rows (``MATCH_COLUMNS``) as MatchOut's fields: their seats (one query for all,
    ``ids`` the matches' ids or a query of them) and how long each took."""
    if not matches:
        return []
    seats: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for seat in session.execute(seats_query(ids)):
        seats[seat.match_id].append(seat._asdict())
    out = []
    for m in matches:
        started, finished = m.started_at, m.finished_at
        duration = None
        if started is not None and finished is not None:
            duration = (as_utc(finished) - as_utc(started)).total_seconds()
        out.append({**m._asdict(), "duration": duration, "participants": seats[m.id]})
    return out


def matches_page(
    session: Session,
    ids: Query,
    order: Sequence[Any],
    paging: Paging,
    *,
    admin: bool = False,
) -> Page[MatchOut]:
    """The page of the matches whose ids ``ids`` selects (in its order), sorted by ``order``.

    The page's ids go to the seats query as a query: the seats query then has the same text
    for every page, which PostgreSQL prepares once and never plans again (a 50-value IN list
    took longer to plan than to run).
    """
    total = count(session, ids)
    page_ids = ids.limit(paging.limit).offset(paging.offset)
    rows = session.execute(select(*MATCH_COLUMNS).where(Match.id.in_(page_ids)).order_by(*order))
    items = _with_seats(session, rows.all(), page_ids)
    return page(MatchOut, items, total, paging, {"admin": admin})


def match_tag(match_id: int) -> frozenset[str]:
    """The tags of what a match's answer shows: its row and its seats (``changes.tags_of``);
    the names it shows change only with ``*``, which drops every part."""
    return frozenset({f"match:{match_id}"})


def matches_page_json(
    session: Session,
    ids: Query,
    order: Sequence[Any],
    paging: Paging,
    parts: Fragments,
    *,
    small: bool = False,
) -> bytes:
    """``matches_page``'s JSON for the public (not admins), its finished matches taken from
    ``parts`` where held: a finished match's answer never changes, while the lists showing it
    are rendered again at every match their agent plays.  Only the matches not held are
    queried (and the finished ones kept).

    ``small``: ``ids`` selects few rows (one agent's matches), so the total rides along with
    the page's ids (``count(*) OVER ()``) rather than in a query of its own; a count of a
    whole big table stays a plain count."""
    since = parts.generation()  # before the rows are read: ``put`` checks what came after
    if small:
        rows = session.execute(
            ids.add_columns(func.count().over().label("_total"))
            .limit(paging.limit)
            .offset(paging.offset)
        ).all()
        wanted = [int(r[0]) for r in rows]
        total = int(rows[0]._total) if rows else 0 if paging.offset == 0 else count(session, ids)
    else:
        total = count(session, ids)
        wanted = [int(i) for i in session.scalars(ids.limit(paging.limit).offset(paging.offset))]
    held = {i: parts.get(f"match:{i}") for i in wanted}
    missing = [i for i, part in held.items() if part is None]
    if missing:
        rows = session.execute(
            select(*MATCH_COLUMNS).where(Match.id.in_(missing)).order_by(*order)
        ).all()
        for item in _with_seats(session, rows, missing):
            match = MatchOut.model_validate(item, context={"admin": False})
            part = match.model_dump_json()
            held[match.id] = part
            if match.status == MatchStatus.finished:
                parts.put(f"match:{match.id}", part, match_tag(match.id), len(part), since)
    # In the ids' order (the page's); a match deleted between the two reads is left out.
    return page_json([p for i in wanted if (p := held.get(i)) is not None], total, paging)


def _listed(
    *,
    agent_id: int | None = None,
    version_id: int | None = None,
    ladder_id: int | None = None,
    league_id: int | None = None,
    status: MatchStatus | None = None,
    kind: MatchKind | None = None,
    settled: bool = False,
) -> Query:
    """The ids of the matches a list shows, newest first (``settled``: finished or failed
    ones only, as an agent's results list them ahead of its queued matches)."""
    match_filter: list[ColumnElement[bool]] = []
    if settled:
        match_filter.append(Match.status.in_((MatchStatus.finished, MatchStatus.failed)))
    if ladder_id is not None:
        match_filter.append(Match.ladder_id == ladder_id)
    if league_id is not None:
        match_filter.append(Match.league_id == league_id)
    if status is not None:
        match_filter.append(Match.status == status)
    if kind is not None:
        match_filter.append(Match.kind == kind)
    seat_filter = []
    if agent_id is not None:
        seat_filter.append(MatchSeat.agent_id == agent_id)
    if version_id is not None:
        seat_filter.append(MatchSeat.version_id == version_id)
    if seat_filter:
        # An agent's page: driven by the seats' (agent_id, match_id) index, newest first,
        # rather than by scanning all matches backwards for the few that are the agent's.
        ids = select(MatchSeat.match_id.label("id")).where(*seat_filter)
        if match_filter:
            ids = ids.join(Match, Match.id == MatchSeat.match_id).where(*match_filter)
        sub = ids.distinct().subquery()  # an agent may hold two seats (two of its versions)
        return select(sub.c.id).order_by(sub.c.id.desc())
    return select(Match.id).where(*match_filter).order_by(Match.id.desc())


def list_matches(
    session: Session,
    paging: Paging,
    *,
    admin: bool = False,
    **filters: Any,
) -> Page[MatchOut]:
    """Matches, newest first, filtered by any of agent, version, ladder, league, status, kind
    (``_listed``'s keywords)."""
    return matches_page(session, _listed(**filters), [Match.id.desc()], paging, admin=admin)


def list_matches_json(session: Session, paging: Paging, parts: Fragments, **filters: Any) -> bytes:
    """``list_matches``'s JSON for the public, built from the finished matches' parts."""
    small = filters.get("agent_id") is not None or filters.get("version_id") is not None
    ids = _listed(**filters)
    return matches_page_json(session, ids, [Match.id.desc()], paging, parts, small=small)


def get_match(session: Session, match_id: int, *, admin: bool = False) -> MatchOut:
    row = session.execute(select(*MATCH_COLUMNS).where(Match.id == match_id)).first()
    if row is None:
        raise NotFound("no such match")
    (item,) = _with_seats(session, [row], [match_id])
    return MatchOut.model_validate(item, from_attributes=True, context={"admin": admin})


def log(session: Session, match_id: int) -> dict[str, Any]:
    """The match's cow006-match-1 log (once it has finished)."""
    get(session, Match, match_id, "match")
    found = results.read_log(session, match_id)
    if found is None:
        raise NotFound("this match has no log (yet)")
    return found


def stderr(session: Session, match_id: int, seat: int, user: User) -> StderrOut:
    """What the bot in ``seat`` wrote to stderr (its agent's owner and admins only)."""
    get(session, Match, match_id, "match")
    row = session.execute(
        select(MatchSeat.match_id, MatchSeat.seat, AgentVersion.label, MatchSeat.stderr)
        .add_columns(Agent.owner_id)
        .join(Agent, Agent.id == MatchSeat.agent_id)
        .join(AgentVersion, AgentVersion.id == MatchSeat.version_id)
        .where(MatchSeat.match_id == match_id, MatchSeat.seat == seat)
    ).first()
    if row is None:
        raise NotFound("no such seat")
    if not (user.is_admin or row.owner_id == user.id):
        raise Forbidden("only the bot's owner reads its stderr")
    return StderrOut.model_validate(row, from_attributes=True)


# --- bulk export of a ladder's logs ------------------------------------------------------


def ladder_logs(
    session: Session, ladder_id: int, since: int, limit: int, *, settled: bool = True
) -> list[LogRow]:
    """The ladder's finished matches after match ``since``, oldest first, at most ``limit``,
    with their seats and stored (gzip-compressed) logs.

    With ``settled``, only matches below the ladder's oldest unfinished one (queued or
    running) are listed: a match created earlier may finish later, and a cursor that passed
    it would miss it.  So the last id of a page is a cursor that never skips a match
    (``exports``).  Without it, every finished match (a snapshot: ``cow006 admin export``).
    """
    get(session, Ladder, ladder_id, "ladder")
    query = (
        select(
            Match.id,
            Match.seed,
            Match.rated,
            Match.finished_at,
            Match.scores,
            Match.ranks,
            MatchLog.body,
        )
        .join(MatchLog, MatchLog.match_id == Match.id)
        .where(
            Match.ladder_id == ladder_id,
            Match.status == MatchStatus.finished,
            Match.id > since,
        )
    )
    if settled:
        unsettled = session.scalar(
            select(func.min(Match.id)).where(
                Match.ladder_id == ladder_id,
                Match.status.in_([MatchStatus.queued, MatchStatus.running]),
            )
        )
        if unsettled is not None:
            query = query.where(Match.id < unsettled)
    rows = session.execute(query.order_by(Match.id).limit(limit)).all()
    seats: dict[int, list[dict[str, Any]]] = defaultdict(list)
    if rows:
        for seat in session.execute(seats_query([r.id for r in rows])):
            seats[seat.match_id].append(
                {
                    "seat": seat.seat,
                    "agent": seat.agent,
                    "agent_id": seat.agent_id,
                    "version": seat.number,
                    "version_id": seat.version_id,
                    "score": seat.score,
                    "rank": seat.rank,
                    "faults": seat.faults,
                }
            )
    return [
        LogRow(r.id, r.seed, r.rated, r.finished_at, r.scores, r.ranks, r.body, seats[r.id])
        for r in rows
    ]


# --- challenges --------------------------------------------------------------------------


def _challengers(session: Session, body: ChallengeCreate) -> list[int]:
    """The version ids to seat, in the order given: each an active version of an enabled
    agent (an agent's newest active one when agents are given)."""
    out = []
    if body.version_ids is not None:
        for vid in body.version_ids:
            version = get(session, AgentVersion, vid, f"version {vid}")
            if version.status != VersionStatus.active:
                raise Conflict(f"version {version.label} is {version.status.value}, not active")
            if version.agent.disabled:
                raise Conflict(f"agent {version.agent.name} is disabled")
            out.append(version.id)
        return out
    for aid in body.agent_ids or ():
        agent = get(session, Agent, aid, f"agent {aid}")
        if agent.disabled:
            raise Conflict(f"agent {agent.name} is disabled")
        latest = session.scalar(
            select(AgentVersion.id)
            .where(AgentVersion.agent_id == agent.id, AgentVersion.status == VersionStatus.active)
            .order_by(AgentVersion.number.desc())
            .limit(1)
        )
        if latest is None:
            raise Conflict(f"agent {agent.name} has no active version")
        out.append(latest)
    return out


def create_challenge(
    session: Session, settings: Settings, body: ChallengeCreate, user: User, address: str | None
) -> tuple[int, list[int]]:
    """An unrated match between the given versions, held until ``workclasses`` admits it;
    its id, and the ids of the challenges admitted now (to send to the workers).

    Over a cap (per user, per address, in all, per opponent version) or against an owner who
    refuses challenges, refused with ``retry_after`` where asking later may succeed.
    """
    # The caps that need no versions first: a flood's refusals cost a few indexed counts.
    refused = workclasses.challenge_refusal(session, settings, user.id, address)
    if refused is not None:
        raise refusal(refused)
    version_ids = _challengers(session, body)
    refused = workclasses.opponent_refusal(session, settings, user.id, version_ids)
    if refused is not None:
        raise refusal(refused)
    match = results.create_match(
        session,
        kind=MatchKind.challenge,
        version_ids=version_ids,
        rated=False,
        seed=body.seed,
        requested_by=user.id,
    )
    match.requested_from = address
    match.held = True  # in the database only, until workclasses admits it
    match_id = match.id
    session.commit()
    admitted = workclasses.admit_challenges(session, settings)
    session.commit()
    return match_id, admitted


def kinds(session: Session, match_ids: Sequence[int]) -> dict[int, MatchKind]:
    """The kind of each of ``match_ids`` (what the executor sends it by: its queue)."""
    if not match_ids:
        return {}
    rows = session.execute(select(Match.id, Match.kind).where(Match.id.in_(list(match_ids))))
    return {int(mid): MatchKind(kind) for mid, kind in rows}


# --- the admin command's reads -----------------------------------------------------------


def failed_ids(session: Session, ladder_id: int | None, limit: int) -> list[int]:
    """The failed matches (of one ladder, or all), oldest first, at most ``limit``."""
    query = select(Match.id).where(Match.status == MatchStatus.failed)
    if ladder_id is not None:
        query = query.where(Match.ladder_id == ladder_id)
    return list(session.scalars(query.order_by(Match.id).limit(limit)))
