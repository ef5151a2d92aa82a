"""/api/ladders: ladders (admins create and open/pause/close them), entries, the leaderboard.

An owner enters an agent with the version to play; posting the entry again switches the
version (each version keeps its own rating and history), deleting it withdraws the agent.
The leaderboard ranks active entries by the conservative rating mu - 3 sigma; an entry whose
version has not played yet shows the ladder's initial rating.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, HTTPException, Response, status
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from .. import ratings
from ..deps import AdminUser, CurrentUser, IdPath, PagingDep, SessionDep
from ..models import (
    Agent,
    AgentVersion,
    Ladder,
    LadderEntry,
    LadderState,
    Rating,
    User,
    VersionStatus,
)
from ..schemas import (
    EntryCreate,
    EntryOut,
    LadderCreate,
    LadderOut,
    LadderUpdate,
    LeaderboardRow,
    Page,
)
from .common import (
    ERR_403,
    ERR_404,
    ERR_409,
    conflict,
    get_or_404,
    page_counted,
    page_rows,
    require_owner,
    respond,
    respond_page,
)

router = APIRouter(prefix="/ladders", tags=["ladders"])


def _ladder_outs(session: Session, ladders: Sequence[Ladder]) -> list[LadderOut]:
    ids = [lad.id for lad in ladders]
    counts: dict[int, int] = {
        lid: n
        for lid, n in session.execute(
            select(LadderEntry.ladder_id, func.count(LadderEntry.id))
            .where(LadderEntry.ladder_id.in_(ids), LadderEntry.active.is_(True))
            .group_by(LadderEntry.ladder_id)
        )
    }
    return [LadderOut.of(lad, counts.get(lad.id, 0)) for lad in ladders]


@router.post(
    "",
    response_model=LadderOut,
    status_code=status.HTTP_201_CREATED,
    responses={**ERR_403, **ERR_409},
)
def create_ladder(body: LadderCreate, _admin: AdminUser, session: SessionDep) -> Response:
    """Create a ladder (admins only); it starts open."""
    if session.scalar(select(Ladder.id).where(Ladder.name == body.name)) is not None:
        raise conflict(f"the ladder name {body.name!r} is taken")
    values = body.model_dump()
    if values["draw_probability"] is None:
        values["draw_probability"] = ratings.DEFAULT_DRAW_PROBABILITY
    ladder = Ladder(**values, state=LadderState.open)
    session.add(ladder)
    try:
        session.commit()
    except IntegrityError as exc:
        session.rollback()
        raise conflict(f"the ladder name {body.name!r} is taken") from exc
    return respond(LadderOut.of(ladder, 0), status.HTTP_201_CREATED)


@router.get("", response_model=Page[LadderOut])
def list_ladders(session: SessionDep, paging: PagingDep) -> Response:
    ladders, total = page_rows(session, select(Ladder).order_by(Ladder.id), paging)
    return respond(
        Page(
            items=_ladder_outs(session, ladders),
            total=total,
            limit=paging.limit,
            offset=paging.offset,
        )
    )


@router.get("/{ladder_id}", response_model=LadderOut, responses=ERR_404)
def get_ladder(ladder_id: IdPath, session: SessionDep) -> Response:
    ladder = get_or_404(session, Ladder, ladder_id, "ladder")
    return respond(_ladder_outs(session, [ladder])[0])


@router.patch("/{ladder_id}", response_model=LadderOut, responses={**ERR_403, **ERR_404})
def update_ladder(
    ladder_id: IdPath, body: LadderUpdate, _admin: AdminUser, session: SessionDep
) -> Response:
    """Open, pause or close a ladder (admins only).  A paused or closed ladder schedules
    no matches; a closed one takes no entries either."""
    ladder = get_or_404(session, Ladder, ladder_id, "ladder")
    ladder.state = body.state
    session.commit()
    return respond(_ladder_outs(session, [ladder])[0])


def _entry_out(entry: LadderEntry, agent: Agent, owner: User, version: AgentVersion) -> EntryOut:
    return EntryOut(
        ladder_id=entry.ladder_id,
        agent_id=agent.id,
        agent=agent.name,
        owner_id=owner.id,
        owner=owner.name,
        version_id=version.id,
        version=version.number,
        label=f"{agent.name}@{version.number}",
        active=entry.active,
        entered_at=entry.entered_at,
    )


@router.post(
    "/{ladder_id}/entries",
    response_model=EntryOut,
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"model": EntryOut, "description": "The entry's version was switched."},
        **ERR_403,
        **ERR_404,
        **ERR_409,
    },
)
def enter(
    ladder_id: IdPath,
    body: EntryCreate,
    user: CurrentUser,
    session: SessionDep,
) -> Response:
    """Enter an agent (owner only) with one of its active versions, or switch the version
    of an existing entry (200).  Earlier versions keep their ratings and history."""
    ladder = get_or_404(session, Ladder, ladder_id, "ladder")
    agent = get_or_404(session, Agent, body.agent_id, "agent")
    require_owner(agent, user, admin_too=False)
    version = session.get(AgentVersion, body.version_id)
    if version is None or version.agent_id != agent.id:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such version of this agent")
    if ladder.state == LadderState.closed:
        raise conflict("this ladder is closed")
    if agent.disabled:
        raise conflict("this agent is disabled")
    if version.status != VersionStatus.active:
        raise conflict(
            f"version {agent.name}@{version.number} is {version.status.value}, not active"
        )
    entry = session.scalar(
        select(LadderEntry).where(
            LadderEntry.ladder_id == ladder.id, LadderEntry.agent_id == agent.id
        )
    )
    code = status.HTTP_201_CREATED
    if entry is None:
        entry = LadderEntry(ladder_id=ladder.id, agent_id=agent.id, version_id=version.id)
        session.add(entry)
    else:
        entry.version_id = version.id
        entry.active = True
        code = status.HTTP_200_OK
    try:
        session.commit()
    except IntegrityError as exc:  # a concurrent first entry of the same agent
        session.rollback()
        raise conflict("this agent was being entered concurrently; try again") from exc
    return respond(_entry_out(entry, agent, user, version), code)


@router.delete(
    "/{ladder_id}/entries/{agent_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={**ERR_403, **ERR_404},
)
def withdraw(ladder_id: IdPath, agent_id: IdPath, user: CurrentUser, session: SessionDep) -> None:
    """Withdraw an agent from the ladder (owner only); its ratings and matches stay."""
    get_or_404(session, Ladder, ladder_id, "ladder")
    agent = get_or_404(session, Agent, agent_id, "agent")
    require_owner(agent, user, admin_too=False)
    entry = session.scalar(
        select(LadderEntry).where(
            LadderEntry.ladder_id == ladder_id,
            LadderEntry.agent_id == agent_id,
            LadderEntry.active.is_(True),
        )
    )
    if entry is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "this agent is not entered here")
    entry.active = False
    session.commit()


@router.get("/{ladder_id}/entries", response_model=Page[EntryOut], responses=ERR_404)
def list_entries(
    ladder_id: IdPath,
    session: SessionDep,
    paging: PagingDep,
    include_withdrawn: bool = False,
) -> Response:
    """The ladder's entries in order of entry (withdrawn ones on request)."""
    get_or_404(session, Ladder, ladder_id, "ladder")
    query = (
        select(LadderEntry, Agent, User, AgentVersion)
        .join(Agent, Agent.id == LadderEntry.agent_id)
        .join(User, User.id == Agent.owner_id)
        .join(AgentVersion, AgentVersion.id == LadderEntry.version_id)
        .where(LadderEntry.ladder_id == ladder_id)
        .order_by(LadderEntry.id)
    )
    if not include_withdrawn:
        query = query.where(LadderEntry.active.is_(True))
    rows, total = page_rows(session, query, paging)
    return respond(
        Page(
            items=[_entry_out(*row) for row in rows],
            total=total,
            limit=paging.limit,
            offset=paging.offset,
        )
    )


@router.get("/{ladder_id}/leaderboard", response_model=Page[LeaderboardRow], responses=ERR_404)
def leaderboard(ladder_id: IdPath, session: SessionDep, paging: PagingDep) -> Response:
    """Active, enabled entries ranked by mu - 3 sigma of the version each plays here."""
    ladder = get_or_404(session, Ladder, ladder_id, "ladder")
    initial = ladder.mu - 3 * ladder.sigma
    conservative = func.coalesce(Rating.conservative, initial)
    query = (
        select(
            LadderEntry.agent_id,
            Agent.name.label("agent"),
            User.id.label("owner_id"),
            User.name.label("owner"),
            AgentVersion.id.label("version_id"),
            AgentVersion.number.label("version"),
            func.coalesce(Rating.mu, ladder.mu).label("mu"),
            func.coalesce(Rating.sigma, ladder.sigma).label("sigma"),
            conservative.label("conservative"),
            func.coalesce(Rating.matches, 0).label("matches"),
            func.coalesce(Rating.wins, 0).label("wins"),
        )
        .join(Agent, Agent.id == LadderEntry.agent_id)
        .join(User, User.id == Agent.owner_id)
        .join(AgentVersion, AgentVersion.id == LadderEntry.version_id)
        .outerjoin(
            Rating,
            (Rating.ladder_id == LadderEntry.ladder_id)
            & (Rating.version_id == LadderEntry.version_id),
        )
        .where(
            LadderEntry.ladder_id == ladder.id,
            LadderEntry.active.is_(True),
            Agent.disabled.is_(False),
        )
        .order_by(conservative.desc(), LadderEntry.id)
    )
    rows, total = page_counted(session, query, paging)
    items = [
        {
            **row._asdict(),
            "rank": paging.offset + i,
            "label": f"{row.agent}@{row.version}",
            "win_rate": row.wins / row.matches if row.matches else None,
        }
        for i, row in enumerate(rows, start=1)
    ]
    return respond_page(LeaderboardRow, items, total, paging)
