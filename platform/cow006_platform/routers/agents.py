"""/api/agents: agents, their uploaded versions (and source), rating history, head-to-head.

An agent belongs to the user who created it.  Only the owner uploads versions; everybody
sees a version's status, only the owner and admins see why validation rejected it or read its
source.  Admins may disable an agent (it then takes no new entries or challenges).
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response, status
from fastapi.responses import JSONResponse
from sqlalchemy import Select, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from .. import limits, ratings, storage, throttle, workclasses
from ..deps import (
    CurrentUser,
    ExecutorDep,
    IdPath,
    IdQuery,
    OptionalUser,
    PagingDep,
    SessionDep,
    SettingsDep,
)
from ..models import Agent, AgentVersion, Ladder, RatingPoint, User, VersionStatus, utcnow
from ..schemas import (
    AgentCreate,
    AgentOut,
    AgentUpdate,
    DuplicateUpload,
    HeadToHead,
    Message,
    Page,
    RatingPointOut,
    SourceFile,
    SourceOut,
    VersionOut,
)
from ..versions import add_version
from .common import (
    ERR_403,
    ERR_404,
    ERR_409,
    ERR_429,
    conflict,
    get_or_404,
    page_counted,
    page_rows,
    require_owner,
    respond,
    respond_page,
)

router = APIRouter(prefix="/agents", tags=["agents"])

# A source file larger than this is listed without its text.
MAX_SOURCE_TEXT = 256 * 1024


def agents_query() -> Select[Any]:
    """Agents as ``AgentOut`` columns: owner's name and version counts in the same query
    (correlated subqueries: each an index lookup on agent_versions.agent_id)."""
    v = AgentVersion
    mine = v.agent_id == Agent.id
    return select(
        Agent.id,
        Agent.name,
        Agent.owner_id,
        User.name.label("owner"),
        Agent.disabled,
        Agent.accepts_challenges,
        Agent.created_at,
        select(func.count(v.id)).where(mine).scalar_subquery().label("versions"),
        select(func.max(v.number)).where(mine).scalar_subquery().label("latest_version"),
        select(func.max(v.number))
        .where(mine, v.status == VersionStatus.active)
        .scalar_subquery()
        .label("latest_active_version"),
    ).join(User, User.id == Agent.owner_id)


def agent_out(session: Session, agent_id: int) -> AgentOut:
    row = session.execute(agents_query().where(Agent.id == agent_id)).first()
    if row is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such agent")
    return AgentOut.model_validate(row, from_attributes=True)


def _version_or_404(session: Session, agent: Agent, number: int) -> AgentVersion:
    version = session.scalar(
        select(AgentVersion).where(AgentVersion.agent_id == agent.id, AgentVersion.number == number)
    )
    if version is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such version")
    return version


def _sees_private(agent: Agent, user: User | None) -> bool:
    return user is not None and (user.is_admin or user.id == agent.owner_id)


@router.post("", response_model=AgentOut, status_code=status.HTTP_201_CREATED, responses=ERR_409)
def create_agent(body: AgentCreate, user: CurrentUser, session: SessionDep) -> Response:
    """Create an agent owned by the caller (names are unique across the arena)."""
    if session.scalar(select(Agent.id).where(Agent.name == body.name)) is not None:
        raise conflict(f"the agent name {body.name!r} is taken")
    agent = Agent(name=body.name, owner_id=user.id)
    session.add(agent)
    try:
        session.commit()
    except IntegrityError as exc:  # a concurrent twin
        session.rollback()
        raise conflict(f"the agent name {body.name!r} is taken") from exc
    return respond(agent_out(session, agent.id), status.HTTP_201_CREATED)


@router.get("", response_model=Page[AgentOut])
def list_agents(session: SessionDep, paging: PagingDep, owner_id: IdQuery = None) -> Response:
    """All agents (or one user's), oldest first."""
    query = agents_query().order_by(Agent.id)
    if owner_id is not None:
        query = query.where(Agent.owner_id == owner_id)
    rows, total = page_rows(session, query, paging)
    return respond_page(AgentOut, rows, total, paging)


@router.get("/{agent_id}", response_model=AgentOut, responses=ERR_404)
def get_agent(agent_id: IdPath, session: SessionDep) -> Response:
    return respond(agent_out(session, agent_id))


@router.patch("/{agent_id}", response_model=AgentOut, responses={**ERR_403, **ERR_404})
def update_agent(
    agent_id: IdPath, body: AgentUpdate, user: CurrentUser, session: SessionDep
) -> Response:
    """Disable or re-enable an agent (admins only); accept or refuse other users'
    challenges against it (its owner, or an admin)."""
    agent = get_or_404(session, Agent, agent_id, "agent")
    if body.disabled is not None and not user.is_admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "admins only")
    if body.accepts_challenges is not None:
        require_owner(agent, user)
        agent.accepts_challenges = body.accepts_challenges
    if body.disabled is not None:
        agent.disabled = body.disabled
    session.commit()
    return respond(agent_out(session, agent.id))


@router.post(
    "/{agent_id}/versions",
    response_model=VersionOut,
    status_code=status.HTTP_201_CREATED,
    responses={
        400: {"model": Message, "description": "The upload is not a usable bot."},
        409: {"model": DuplicateUpload, "description": "Identical to an existing version."},
        413: {"model": Message, "description": "The upload is too large."},
        **ERR_403,
        **ERR_404,
        **ERR_429,
    },
    openapi_extra=limits.UPLOAD_BODY,
)
def upload_version(
    agent_id: IdPath,
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    executor: ExecutorDep,
    upload: limits.UploadDep,
) -> Response:
    """Upload a new version (owner only).  It starts ``pending``; validation then makes it
    ``active`` or ``rejected`` (with a reason only the owner sees)."""
    agent = get_or_404(session, Agent, agent_id, "agent")
    require_owner(agent, user, admin_too=False)
    if agent.disabled:
        raise conflict("this agent is disabled")
    since = utcnow() - timedelta(days=1)
    recent = session.scalar(
        select(func.count(AgentVersion.id))
        .join(Agent, Agent.id == AgentVersion.agent_id)
        .where(Agent.owner_id == user.id, AgentVersion.created_at >= since)
    )
    if (recent or 0) >= settings.uploads_per_day:
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            f"at most {settings.uploads_per_day} uploads a day; try again later",
        )
    # The same cap per client address, whatever the accounts behind it (workclasses).
    address = throttle.client_address(request)
    refusal = workclasses.upload_refusal(session, settings, address)
    if refusal is not None:
        headers = {"Retry-After": str(refusal.retry_after)} if refusal.retry_after else None
        raise HTTPException(refusal.status, refusal.message, headers=headers)
    # The body was read by ``upload`` after the token was checked, on the event loop (a slow
    # sender holds no thread nor connection; limits.py), capped by limits.RequestLimits.
    filename, data = upload.filename, upload.data
    # Storage addresses uploads by the sha256 of their bytes: a duplicate is found unpacked.
    existing = session.scalar(
        select(AgentVersion).where(
            AgentVersion.agent_id == agent.id,
            AgentVersion.sha256 == hashlib.sha256(data).hexdigest(),
        )
    )
    if existing is not None:
        return _duplicate(agent, existing)
    try:
        stored = storage.store_upload(settings, filename, data)
    except storage.UploadError as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from exc
    version = add_version(session, agent.id, stored)
    version.uploaded_from = address
    try:
        session.commit()
    except IntegrityError as exc:  # a concurrent upload took the number, or the same file
        session.rollback()
        raise conflict("another upload to this agent was being stored; try again") from exc
    executor.submit_validation(version.id)
    return respond(VersionOut.of(version, agent.name, private=True), status.HTTP_201_CREATED)


def _duplicate(agent: Agent, existing: AgentVersion) -> JSONResponse:
    label = f"{agent.name}@{existing.number}"
    return JSONResponse(
        status_code=status.HTTP_409_CONFLICT,
        content={
            "detail": {
                "message": f"this upload is identical to version {label}",
                "version_id": existing.id,
                "number": existing.number,
            }
        },
    )


@router.get("/{agent_id}/versions", response_model=Page[VersionOut], responses=ERR_404)
def list_versions(
    agent_id: IdPath, user: OptionalUser, session: SessionDep, paging: PagingDep
) -> Response:
    """An agent's versions, oldest first (``reason`` only for the owner and admins)."""
    agent = get_or_404(session, Agent, agent_id, "agent")
    private = _sees_private(agent, user)
    query = (
        select(AgentVersion).where(AgentVersion.agent_id == agent.id).order_by(AgentVersion.number)
    )
    versions, total = page_rows(session, query, paging)
    return respond(
        Page(
            items=[VersionOut.of(v, agent.name, private=private) for v in versions],
            total=total,
            limit=paging.limit,
            offset=paging.offset,
        )
    )


@router.get("/{agent_id}/versions/{number}", response_model=VersionOut, responses=ERR_404)
def get_version(
    agent_id: IdPath, number: IdPath, user: OptionalUser, session: SessionDep
) -> Response:
    agent = get_or_404(session, Agent, agent_id, "agent")
    version = _version_or_404(session, agent, number)
    return respond(VersionOut.of(version, agent.name, private=_sees_private(agent, user)))


@router.get(
    "/{agent_id}/versions/{number}/source",
    response_model=SourceOut,
    responses={**ERR_403, **ERR_404},
)
def get_source(
    agent_id: IdPath,
    number: IdPath,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
) -> Response:
    """A version's files (the owner and admins only: nobody reads another owner's code)."""
    agent = get_or_404(session, Agent, agent_id, "agent")
    require_owner(agent, user)
    version = _version_or_404(session, agent, number)
    root = storage.bot_path(settings, version.sha256)
    if not root.is_dir():
        raise HTTPException(status.HTTP_404_NOT_FOUND, "this version's files are gone")
    return respond(
        SourceOut(
            version_id=version.id,
            label=f"{agent.name}@{version.number}",
            filename=version.filename,
            sha256=version.sha256,
            files=_source_files(root),
        )
    )


def _source_files(root: Path) -> list[SourceFile]:
    """The stored folder's files (storage admits regular files only), bot.py first."""
    out = []
    for p in root.rglob("*"):
        if p.is_symlink() or not p.is_file():  # never follow a link, whatever put it there
            continue
        size = p.stat().st_size
        text = p.read_bytes().decode("utf-8", "replace") if size <= MAX_SOURCE_TEXT else None
        out.append(SourceFile(path=p.relative_to(root).as_posix(), size=size, text=text))
    out.sort(key=lambda f: (f.path != storage.BOT_FILE, f.path))
    return out


@router.get("/{agent_id}/ratings", response_model=Page[RatingPointOut], responses=ERR_404)
def rating_history(
    agent_id: IdPath, session: SessionDep, paging: PagingDep, ladder_id: IdQuery = None
) -> Response:
    """The agent's rating after each rated match (all versions), oldest first."""
    get_or_404(session, Agent, agent_id, "agent")
    # A subquery of the agent's version ids keeps the (version_id, ladder_id, id) index usable.
    version_ids = select(AgentVersion.id).where(AgentVersion.agent_id == agent_id)
    query = (
        select(
            RatingPoint.match_id,
            RatingPoint.ladder_id,
            RatingPoint.version_id,
            AgentVersion.number.label("version"),
            RatingPoint.mu,
            RatingPoint.sigma,
            (RatingPoint.mu - 3 * RatingPoint.sigma).label("conservative"),
            RatingPoint.created_at,
        )
        .join(AgentVersion, AgentVersion.id == RatingPoint.version_id)
        .where(RatingPoint.version_id.in_(version_ids))
        .order_by(RatingPoint.id)
    )
    if ladder_id is not None:
        query = query.where(RatingPoint.ladder_id == ladder_id)
    rows, total = page_counted(session, query, paging)
    return respond_page(RatingPointOut, rows, total, paging)


@router.get(
    "/{agent_id}/head-to-head/{other_id}",
    response_model=HeadToHead,
    responses={400: {"model": Message, "description": "An agent against itself."}, **ERR_404},
)
def head_to_head(
    agent_id: IdPath, other_id: IdPath, session: SessionDep, ladder_id: IdQuery = None
) -> Response:
    """How two agents fared in the matches they played together (optionally in one ladder)."""
    if agent_id == other_id:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "pick two different agents")
    a = get_or_404(session, Agent, agent_id, "agent")
    b = get_or_404(session, Agent, other_id, "agent")
    if ladder_id is not None:
        get_or_404(session, Ladder, ladder_id, "ladder")
    return respond(HeadToHead(**ratings.head_to_head(session, a.id, b.id, ladder_id=ladder_id)))
