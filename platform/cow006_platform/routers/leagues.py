"""/api/leagues: fixed fields of frozen versions playing a schedule (admins run them).

A league is created with its entrants (version ids, frozen: later uploads do not change who
plays) and started once: that schedules its first round and hands the matches to the
executor; the workers start each next round when the current one is settled and mark the
league finished after the last (``cow006_workers.scheduler.advance_league``).  Anyone reads
progress, the schedule and the standings (final once the league has finished).  The GET
routes never write.
"""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from .. import crud
from ..deps import AdminUser, ExecutorDep, IdPath, OptionalUser, PagingDep, SessionDep
from ..schemas import LeagueCreate, LeagueOut, MatchOut, Page, Standings
from .common import ERR_403, ERR_404, ERR_409, ApiRoute, respond
from .matches import is_admin

router = APIRouter(prefix="/leagues", tags=["leagues"], route_class=ApiRoute)


@router.post(
    "",
    response_model=LeagueOut,
    status_code=status.HTTP_201_CREATED,
    responses={**ERR_403, **ERR_404, **ERR_409},
)
def create_league(body: LeagueCreate, _admin: AdminUser, session: SessionDep) -> Response:
    """Create a league of active versions (admins only); it waits to be started."""
    league_id = crud.leagues.create_league(session, body)
    return respond(crud.leagues.get_league(session, league_id, admin=True), status.HTTP_201_CREATED)


@router.get("", response_model=Page[LeagueOut])
def list_leagues(session: SessionDep, paging: PagingDep, user: OptionalUser = None) -> Response:
    return respond(crud.leagues.list_leagues(session, paging, admin=is_admin(user)))


@router.get("/{league_id}", response_model=LeagueOut, responses=ERR_404)
def get_league(league_id: IdPath, session: SessionDep, user: OptionalUser = None) -> Response:
    return respond(crud.leagues.get_league(session, league_id, admin=is_admin(user)))


@router.post(
    "/{league_id}/start", response_model=LeagueOut, responses={**ERR_403, **ERR_404, **ERR_409}
)
def start_league(
    league_id: IdPath, _admin: AdminUser, session: SessionDep, executor: ExecutorDep
) -> Response:
    """Schedule every match of the league and hand them to the executor (admins only)."""
    for match_id in crud.leagues.start_league(session, league_id):
        executor.submit_match(match_id)
    return respond(crud.leagues.get_league(session, league_id, admin=True))


@router.get("/{league_id}/schedule", response_model=Page[MatchOut], responses=ERR_404)
def schedule(
    league_id: IdPath, session: SessionDep, paging: PagingDep, user: OptionalUser = None
) -> Response:
    """The league's matches, round by round."""
    return respond(crud.leagues.schedule(session, league_id, paging, admin=is_admin(user)))


@router.get("/{league_id}/standings", response_model=Standings, responses=ERR_404)
def standings(league_id: IdPath, session: SessionDep) -> Response:
    """The standings so far; ``final`` once the league has finished."""
    return respond(crud.leagues.standings(session, league_id))
