"""/api/matches: every match (ladder, league, challenge), its log, and each seat's stderr.

Matches and logs are public; a bot's stderr is its owner's business (and the admins').  The
seed of a match not finished yet is shown to admins only (``schemas.MatchOut``): it fixes
the deals, so anyone else could compute every hand of a match being played.  Answers to
anonymous callers (the ones the page cache keeps) therefore never hold it.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import JSONResponse

from .. import changes, crud
from ..cache import cached, is_id, query_params
from ..deps import CurrentUser, IdPath, IdQuery, OptionalUser, PagingDep, SessionDep
from ..models import MatchKind, MatchStatus, User
from ..schemas import MAX_PLAYERS, MatchOut, Page, StderrOut
from .common import ERR_403, ERR_404, ApiRoute, page_parts, respond, respond_json

router = APIRouter(prefix="/matches", tags=["matches"], route_class=ApiRoute)


def is_admin(user: User | None) -> bool:
    """Whether the caller (None for anonymous) sees what only admins see."""
    return bool(user is not None and user.is_admin)


def _list_tags(_params: dict[str, str], query: str) -> set[str] | None:
    """An agent's list of matches (``?agent_id=`` and paging alone) shows that agent's
    matches; any other list, every match."""
    params = query_params(query)
    if "agent_id" in params and set(params) <= {"agent_id", "limit", "offset"}:
        return {f"agent:{int(params['agent_id'])}"} if is_id(params["agent_id"]) else None
    return {changes.MATCHES}


@router.get("", response_model=Page[MatchOut])
@cached(_list_tags)
def list_matches(
    request: Request,
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
    filters: dict[str, Any] = {
        "agent_id": agent_id,
        "version_id": version_id,
        "ladder_id": ladder_id,
        "league_id": league_id,
        "status": match_status,
        "kind": kind,
    }
    parts = page_parts(request)
    if parts is not None and not is_admin(user):  # admins see more (seeds): no parts
        return respond_json(crud.matches.list_matches_json(session, paging, parts, **filters))
    return respond(crud.matches.list_matches(session, paging, admin=is_admin(user), **filters))


@router.get("/{match_id}", response_model=MatchOut, responses=ERR_404)
@cached("match:{match_id}")
def get_match(match_id: IdPath, session: SessionDep, user: OptionalUser = None) -> Response:
    return respond(crud.matches.get_match(session, match_id, admin=is_admin(user)))


@router.get(
    "/{match_id}/log",
    response_class=JSONResponse,
    responses={
        200: {"description": "The cow006-match-1 log.", "content": {"application/json": {}}},
        **ERR_404,
    },
)
@cached("match:{match_id}")
def get_log(match_id: IdPath, session: SessionDep) -> Any:
    """The match's cow006-match-1 log (once it has finished)."""
    return JSONResponse(crud.matches.log(session, match_id))


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
    return respond(crud.matches.stderr(session, match_id, seat, user))
