"""/api/leagues: fixed fields of frozen versions playing a schedule (admins run them).

A league is created with its entrants (version ids, frozen: later uploads do not change who
plays) and started once: that schedules its first round and hands the matches to the
executor, which starts each next round when the current one is settled and marks the league
finished after the last (``execution.after_match``).  Anyone reads progress, the schedule and
the standings (final once the league has finished).  The GET routes never write.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from fastapi import APIRouter, Response, status
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from .. import leagues as league_service
from ..deps import AdminUser, ExecutorDep, IdPath, OptionalUser, PagingDep, SessionDep
from ..models import (
    Agent,
    AgentVersion,
    League,
    LeagueEntrant,
    LeagueState,
    Match,
    MatchStatus,
    User,
    VersionStatus,
)
from ..schemas import (
    LeagueCreate,
    LeagueEntrantOut,
    LeagueOut,
    LeagueProgress,
    MatchOut,
    Page,
    StandingRow,
    Standings,
)
from .common import ERR_403, ERR_404, ERR_409, conflict, get_or_404, page_rows, respond
from .matches import is_admin, match_outs

router = APIRouter(prefix="/leagues", tags=["leagues"])


def _league_outs(
    session: Session, leagues: Sequence[League], *, admin: bool = False
) -> list[LeagueOut]:
    """Leagues with entrants and progress, in two queries for the lot; the league's seed
    (every match seed of the league derives from it) only for admins until it finished."""
    ids = [lg.id for lg in leagues]
    entrants: dict[int, list[LeagueEntrantOut]] = {i: [] for i in ids}
    for league_id, vid, number, agent_id, agent, owner_id, owner in session.execute(
        select(
            LeagueEntrant.league_id,
            AgentVersion.id,
            AgentVersion.number,
            Agent.id,
            Agent.name,
            User.id,
            User.name,
        )
        .join(AgentVersion, AgentVersion.id == LeagueEntrant.version_id)
        .join(Agent, Agent.id == AgentVersion.agent_id)
        .join(User, User.id == Agent.owner_id)
        .where(LeagueEntrant.league_id.in_(ids))
        .order_by(LeagueEntrant.id)
    ):
        entrants[league_id].append(
            LeagueEntrantOut(
                version_id=vid,
                label=f"{agent}@{number}",
                agent_id=agent_id,
                owner_id=owner_id,
                owner=owner,
            )
        )
    counts: dict[int, dict[MatchStatus, int]] = {i: {} for i in ids}
    rounds: dict[int, int] = {}
    for league_id, match_status, n, last_round in session.execute(
        select(Match.league_id, Match.status, func.count(Match.id), func.max(Match.league_round))
        .where(Match.league_id.in_(ids))
        .group_by(Match.league_id, Match.status)
    ):
        counts[league_id][match_status] = n
        rounds[league_id] = max(rounds.get(league_id, 0), last_round or 0)
    out = []
    for lg in leagues:
        c = counts[lg.id]
        progress = LeagueProgress(
            round=rounds.get(lg.id, 0),
            matches=sum(c.values()),
            finished=c.get(MatchStatus.finished, 0),
            failed=c.get(MatchStatus.failed, 0),
            queued=c.get(MatchStatus.queued, 0),
            running=c.get(MatchStatus.running, 0),
        )
        out.append(LeagueOut.of(lg, entrants[lg.id], progress, admin=admin))
    return out


@router.post(
    "",
    response_model=LeagueOut,
    status_code=status.HTTP_201_CREATED,
    responses={**ERR_403, **ERR_404, **ERR_409},
)
def create_league(body: LeagueCreate, _admin: AdminUser, session: SessionDep) -> Response:
    """Create a league of active versions (admins only); it waits to be started."""
    if session.scalar(select(League.id).where(League.name == body.name)) is not None:
        raise conflict(f"the league name {body.name!r} is taken")
    for vid in body.entrants:
        version = get_or_404(session, AgentVersion, vid, f"version {vid}")
        if version.status != VersionStatus.active:
            raise conflict(f"version {version.label} is {version.status.value}, not active")
    seed = body.seed if body.seed is not None else random.SystemRandom().getrandbits(63)
    league = League(
        name=body.name,
        table_size=body.table_size,
        rounds=body.rounds,
        decision_time=body.decision_time,
        time_bank=body.time_bank,
        seed=seed,
        state=LeagueState.scheduled,
    )
    session.add(league)
    session.flush()
    session.add_all(LeagueEntrant(league_id=league.id, version_id=v) for v in body.entrants)
    try:
        session.commit()
    except IntegrityError as exc:
        session.rollback()
        raise conflict(f"the league name {body.name!r} is taken") from exc
    return respond(_league_outs(session, [league], admin=True)[0], status.HTTP_201_CREATED)


@router.get("", response_model=Page[LeagueOut])
def list_leagues(session: SessionDep, paging: PagingDep, user: OptionalUser = None) -> Response:
    leagues, total = page_rows(session, select(League).order_by(League.id), paging)
    return respond(
        Page(
            items=_league_outs(session, leagues, admin=is_admin(user)),
            total=total,
            limit=paging.limit,
            offset=paging.offset,
        )
    )


@router.get("/{league_id}", response_model=LeagueOut, responses=ERR_404)
def get_league(league_id: IdPath, session: SessionDep, user: OptionalUser = None) -> Response:
    league = get_or_404(session, League, league_id, "league")
    return respond(_league_outs(session, [league], admin=is_admin(user))[0])


@router.post(
    "/{league_id}/start", response_model=LeagueOut, responses={**ERR_403, **ERR_404, **ERR_409}
)
def start_league(
    league_id: IdPath, _admin: AdminUser, session: SessionDep, executor: ExecutorDep
) -> Response:
    """Schedule every match of the league and hand them to the executor (admins only)."""
    league = get_or_404(session, League, league_id, "league")
    if league.state != LeagueState.scheduled:
        raise conflict(f"this league is {league.state.value} already")
    matches = league_service.start_league(session, league)
    session.commit()
    for match in matches:
        executor.submit_match(match.id)
    return respond(_league_outs(session, [league], admin=True)[0])


@router.get("/{league_id}/schedule", response_model=Page[MatchOut], responses=ERR_404)
def schedule(
    league_id: IdPath, session: SessionDep, paging: PagingDep, user: OptionalUser = None
) -> Response:
    """The league's matches, round by round."""
    get_or_404(session, League, league_id, "league")
    query = select(Match).where(Match.league_id == league_id).order_by(Match.league_round, Match.id)
    matches, total = page_rows(session, query, paging)
    return respond(
        Page(
            items=match_outs(session, matches, admin=is_admin(user)),
            total=total,
            limit=paging.limit,
            offset=paging.offset,
        )
    )


@router.get("/{league_id}/standings", response_model=Standings, responses=ERR_404)
def standings(league_id: IdPath, session: SessionDep) -> Response:
    """The standings so far; ``final`` once the league has finished."""
    league = get_or_404(session, League, league_id, "league")
    return respond(
        Standings(
            league_id=league.id,
            state=league.state,
            final=league.state == LeagueState.finished,
            standings=[StandingRow(**row) for row in league_service.standings(session, league.id)],
        )
    )
