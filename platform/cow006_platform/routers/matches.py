"""/api/matches: every match (ladder, league, challenge), its log, and each seat's stderr.

Matches and logs are public; a bot's stderr is its owner's business (and the admins').  The
seed of a match not finished yet is shown to admins only (``schemas.visible_seed``): it fixes
the deals, so anyone else could compute every hand of a match being played.  Answers to
anonymous callers (the ones the page cache keeps) therefore never hold it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Response, status
from fastapi.responses import JSONResponse
from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from .. import results
from ..deps import CurrentUser, IdPath, IdQuery, OptionalUser, PagingDep, SessionDep
from ..models import Agent, AgentVersion, Match, MatchKind, MatchSeat, MatchStatus, User
from ..schemas import MAX_PLAYERS, MatchOut, Page, SeatOut, StderrOut, as_utc, visible_seed
from .common import ERR_403, ERR_404, count, get_or_404, respond, respond_page

router = APIRouter(prefix="/matches", tags=["matches"])


# What a match page shows (not the workers' lease bookkeeping), selected as plain columns:
# a list page builds its answer from rows, without loading ORM objects.
MATCH_COLUMNS = [
    c
    for c in Match.__table__.c
    if c.key not in ("worker", "lease_expires_at", "attempts", "rating_applied")
]


def _seats_query(ids: Select[Any] | list[int]) -> Select[Any]:
    return (
        select(
            MatchSeat.match_id,
            MatchSeat.seat,
            MatchSeat.version_id,
            MatchSeat.agent_id,
            MatchSeat.score,
            MatchSeat.rank,
            MatchSeat.faults,
            MatchSeat.forfeited,
            AgentVersion.number,
            Agent.name.label("agent"),
            User.id.label("owner_id"),
            User.name.label("owner"),
        )
        .join(AgentVersion, AgentVersion.id == MatchSeat.version_id)
        .join(Agent, Agent.id == MatchSeat.agent_id)
        .join(User, User.id == Agent.owner_id)
        .where(MatchSeat.match_id.in_(ids))
        .order_by(MatchSeat.match_id, MatchSeat.seat)
    )


def _seat_dicts(session: Session, ids: Select[Any] | list[int]) -> dict[int, list[dict[str, Any]]]:
    """The seats of the matches ``ids`` (a list, or a page's query), as SeatOut fields."""
    seats: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in session.execute(_seats_query(ids)):
        seats[r.match_id].append(
            {
                "seat": r.seat,
                "version_id": r.version_id,
                "label": f"{r.agent}@{r.number}",
                "agent_id": r.agent_id,
                "agent": r.agent,
                "owner_id": r.owner_id,
                "owner": r.owner,
                "score": r.score,
                "rank": r.rank,
                "faults": r.faults,
                "forfeited": r.forfeited,
            }
        )
    return seats


def match_dicts(
    session: Session, matches: Sequence[Any], ids: Select[Any], *, admin: bool = False
) -> list[dict[str, Any]]:
    """A page of matches (rows of ``MATCH_COLUMNS``) as dicts in MatchOut's shape (the seed
    as ``visible_seed`` allows).

    ``ids`` gives the page's ids as a query: the seats query then has the same text for every
    page, which PostgreSQL prepares once and never plans again (a 50-value IN list took
    longer to plan than to run).
    """
    if not matches:
        return []
    seats = _seat_dicts(session, ids)
    out = []
    for m in matches:
        item = m._asdict()
        item["seed"] = visible_seed(m.status, m.seed, admin)
        started, finished = m.started_at, m.finished_at
        item["duration"] = (
            (as_utc(finished) - as_utc(started)).total_seconds()
            if started is not None and finished is not None
            else None
        )
        item["participants"] = seats[m.id]
        out.append(item)
    return out


def match_outs(session: Session, matches: Sequence[Any], *, admin: bool = False) -> list[MatchOut]:
    """Matches (ORM objects or rows) with their participants, in one query for the seats;
    the seed of an unfinished match only for ``admin``."""
    if not matches:
        return []
    seats = _seat_dicts(session, [m.id for m in matches])
    return [MatchOut.of(m, [SeatOut(**d) for d in seats[m.id]], admin=admin) for m in matches]


def is_admin(user: Any) -> bool:
    """Whether the caller (a User, or None for anonymous) sees what only admins see."""
    return bool(user is not None and user.is_admin)


@router.get("", response_model=Page[MatchOut])
def list_matches(
    session: SessionDep,
    paging: PagingDep,
    agent_id: IdQuery = None,
    version_id: IdQuery = None,
    ladder_id: IdQuery = None,
    league_id: IdQuery = None,
    match_status: Annotated[MatchStatus | None, Query(alias="status")] = None,
    kind: MatchKind | None = None,
    user: OptionalUser = None,
) -> Response:
    """Matches, newest first, filtered by any of agent, version, ladder, league, status, kind."""
    match_filter = []
    if ladder_id is not None:
        match_filter.append(Match.ladder_id == ladder_id)
    if league_id is not None:
        match_filter.append(Match.league_id == league_id)
    if match_status is not None:
        match_filter.append(Match.status == match_status)
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
        ordered = select(sub.c.id).order_by(sub.c.id.desc())
    else:
        ordered = select(Match.id).where(*match_filter).order_by(Match.id.desc())
    total = count(session, ordered)
    page = ordered.limit(paging.limit).offset(paging.offset)
    matches = session.execute(
        select(*MATCH_COLUMNS).where(Match.id.in_(page)).order_by(Match.id.desc())
    ).all()
    items = match_dicts(session, matches, page, admin=is_admin(user))
    return respond_page(MatchOut, items, total, paging)


@router.get("/{match_id}", response_model=MatchOut, responses=ERR_404)
def get_match(match_id: IdPath, session: SessionDep, user: OptionalUser = None) -> Response:
    match = get_or_404(session, Match, match_id, "match")
    return respond(match_outs(session, [match], admin=is_admin(user))[0])


@router.get(
    "/{match_id}/log",
    response_class=JSONResponse,
    responses={
        200: {"description": "The cow006-match-1 log.", "content": {"application/json": {}}},
        **ERR_404,
    },
)
def get_log(match_id: IdPath, session: SessionDep) -> Any:
    """The match's cow006-match-1 log (once it has finished)."""
    get_or_404(session, Match, match_id, "match")
    log = results.read_log(session, match_id)
    if log is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "this match has no log (yet)")
    return JSONResponse(log)


@router.get(
    "/{match_id}/seats/{seat}/stderr", response_model=StderrOut, responses={**ERR_403, **ERR_404}
)
def get_stderr(
    match_id: IdPath,
    seat: Annotated[int, Path(ge=0, le=MAX_PLAYERS - 1)],
    user: CurrentUser,
    session: SessionDep,
) -> Response:
    """What the bot in ``seat`` wrote to stderr (its agent's owner and admins only)."""
    get_or_404(session, Match, match_id, "match")
    row = session.execute(
        select(MatchSeat, Agent, AgentVersion.number)
        .join(Agent, Agent.id == MatchSeat.agent_id)
        .join(AgentVersion, AgentVersion.id == MatchSeat.version_id)
        .where(MatchSeat.match_id == match_id, MatchSeat.seat == seat)
    ).first()
    if row is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such seat")
    match_seat, agent, number = row
    if not (user.is_admin or agent.owner_id == user.id):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "only the bot's owner reads its stderr")
    return respond(
        StderrOut(
            match_id=match_id, seat=seat, label=f"{agent.name}@{number}", stderr=match_seat.stderr
        )
    )
