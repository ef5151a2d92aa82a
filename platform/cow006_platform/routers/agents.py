"""/api/agents: agents, their uploaded versions (and source), rating history, head-to-head.

An agent belongs to the user who created it.  Only the owner uploads versions; everybody
sees a version's status, only the owner and admins see why validation rejected it or read its
source.  Admins may disable an agent (it then takes no new entries or challenges).
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from .. import crud, limits, throttle
from ..cache import cached
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
from ..schemas import (
    AgentCreate,
    AgentOut,
    AgentUpdate,
    DuplicateUpload,
    HeadToHead,
    Message,
    Page,
    RatingPointOut,
    SourceOut,
    VersionOut,
)
from .common import (
    ERR_403,
    ERR_404,
    ERR_409,
    ERR_429,
    ApiRoute,
    Responses,
    respond,
    respond_json,
)

router = APIRouter(prefix="/agents", tags=["agents"], route_class=ApiRoute)
AGENT_TAGS = "agent:{agent_id}"


@router.post("", response_model=AgentOut, status_code=status.HTTP_201_CREATED, responses=ERR_409)
def create_agent(body: AgentCreate, user: CurrentUser, session: SessionDep) -> Response:
    """Create an agent owned by the caller (names are unique across the arena)."""
    return respond(crud.agents.create_agent(session, body.name, user), status.HTTP_201_CREATED)


@router.get("", response_model=Page[AgentOut])
def list_agents(session: SessionDep, paging: PagingDep, owner_id: IdQuery = None) -> Response:
    """All agents (or one user's), oldest first."""
    return respond(crud.agents.list_agents(session, paging, owner_id))


@router.get("/{agent_id}", response_model=AgentOut, responses=ERR_404)
@cached(AGENT_TAGS)
def get_agent(agent_id: IdPath, session: SessionDep) -> Response:
    return respond(crud.agents.get_agent(session, agent_id))


@router.patch("/{agent_id}", response_model=AgentOut, responses={**ERR_403, **ERR_404})
def update_agent(
    agent_id: IdPath, body: AgentUpdate, user: CurrentUser, session: SessionDep
) -> Response:
    """Disable or re-enable an agent (admins only); accept or refuse other users'
    challenges against it (its owner, or an admin)."""
    return respond(crud.agents.update_agent(session, agent_id, body, user))


UPLOAD_ERRORS: Responses = {
    400: {"model": Message, "description": "The upload is not a usable bot."},
    409: {"model": DuplicateUpload, "description": "Identical to an existing version."},
    413: {"model": Message, "description": "The upload is too large."},
}


@router.post(
    "/{agent_id}/versions",
    response_model=VersionOut,
    status_code=status.HTTP_201_CREATED,
    responses={**UPLOAD_ERRORS, **ERR_403, **ERR_404, **ERR_429},
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
    # The body was read by ``upload`` after the token was checked, on the event loop (a slow
    # sender holds no thread nor connection; limits.py), capped by limits.RequestLimits.
    version = crud.agents.upload_version(
        session,
        settings,
        agent_id,
        user,
        (upload.filename, upload.data),
        throttle.client_address(request),
    )
    executor.submit_validation(version.id)
    out = VersionOut.model_validate(version, from_attributes=True, context={"private": True})
    crud.agents.with_validation(session, [out])  # its place in the validation queue
    return respond(out, status.HTTP_201_CREATED)


@router.get("/{agent_id}/versions", response_model=Page[VersionOut], responses=ERR_404)
def list_versions(
    agent_id: IdPath, user: OptionalUser, session: SessionDep, paging: PagingDep
) -> Response:
    """An agent's versions, oldest first (``reason`` only for the owner and admins)."""
    return respond(crud.agents.list_versions(session, agent_id, user, paging))


@router.get("/{agent_id}/versions/{number}", response_model=VersionOut, responses=ERR_404)
def get_version(
    agent_id: IdPath, number: IdPath, user: OptionalUser, session: SessionDep
) -> Response:
    return respond(crud.agents.get_version(session, agent_id, number, user))


@router.get(
    "/{agent_id}/versions/{number}/source",
    response_model=SourceOut,
    responses={**ERR_403, **ERR_404},
)
def get_source(
    agent_id: IdPath, number: IdPath, user: CurrentUser, session: SessionDep, settings: SettingsDep
) -> Response:
    """A version's files (the owner and admins only: nobody reads another owner's code)."""
    return respond(crud.agents.source(session, settings, agent_id, number, user))


@router.get("/{agent_id}/ratings", response_model=Page[RatingPointOut], responses=ERR_404)
@cached(AGENT_TAGS)
def rating_history(
    agent_id: IdPath, session: SessionDep, paging: PagingDep, ladder_id: IdQuery = None
) -> Response:
    """The agent's rating after each rated match (all versions), oldest first."""
    # One query, the points' JSON reused by their values (``rating_history``'s bytes).
    return respond_json(crud.agents.rating_history_json(session, agent_id, paging, ladder_id))


@router.get(
    "/{agent_id}/head-to-head/{other_id}",
    response_model=HeadToHead,
    responses={400: {"model": Message, "description": "An agent against itself."}, **ERR_404},
)
def head_to_head(
    agent_id: IdPath, other_id: IdPath, session: SessionDep, ladder_id: IdQuery = None
) -> Response:
    """How two agents fared in the matches they played together (optionally in one ladder)."""
    return respond(crud.agents.compare(session, agent_id, other_id, ladder_id))
