"""/api/challenges: any user may pit 2 to 10 active versions against each other, unrated.

Challenges are rate-limited per user per hour (``settings.challenges_per_hour``): each runs
real bot processes on the arena's workers.
"""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, HTTPException, Response, status
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from .. import results
from ..deps import CurrentUser, ExecutorDep, SessionDep, SettingsDep
from ..models import Agent, AgentVersion, Match, MatchKind, VersionStatus, utcnow
from ..schemas import ChallengeCreate, MatchOut
from .common import ERR_404, ERR_409, ERR_429, conflict, get_or_404, respond
from .matches import match_outs

router = APIRouter(prefix="/challenges", tags=["challenges"])


def _versions(session: Session, body: ChallengeCreate) -> list[int]:
    """The version ids to seat, in the order given; 404 or 409 for one that cannot play."""
    out = []
    if body.version_ids is not None:
        for vid in body.version_ids:
            version = get_or_404(session, AgentVersion, vid, f"version {vid}")
            if version.status != VersionStatus.active:
                raise conflict(f"version {version.label} is {version.status.value}, not active")
            if version.agent.disabled:
                raise conflict(f"agent {version.agent.name} is disabled")
            out.append(version.id)
        return out
    for aid in body.agent_ids or ():
        agent = get_or_404(session, Agent, aid, f"agent {aid}")
        if agent.disabled:
            raise conflict(f"agent {agent.name} is disabled")
        latest = session.scalar(
            select(AgentVersion.id)
            .where(AgentVersion.agent_id == agent.id, AgentVersion.status == VersionStatus.active)
            .order_by(AgentVersion.number.desc())
            .limit(1)
        )
        if latest is None:
            raise conflict(f"agent {agent.name} has no active version")
        out.append(latest)
    return out


@router.post(
    "",
    response_model=MatchOut,
    status_code=status.HTTP_201_CREATED,
    responses={**ERR_404, **ERR_409, **ERR_429},
)
def create_challenge(
    body: ChallengeCreate,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    executor: ExecutorDep,
) -> Response:
    """Play an unrated match between the given versions (or the agents' newest active ones)."""
    since = utcnow() - timedelta(hours=1)
    recent = session.scalar(
        select(func.count(Match.id)).where(
            Match.kind == MatchKind.challenge,
            Match.requested_by == user.id,
            Match.created_at >= since,
        )
    )
    if (recent or 0) >= settings.challenges_per_hour:
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            f"at most {settings.challenges_per_hour} challenges an hour; try again later",
        )
    version_ids = _versions(session, body)
    match = results.create_match(
        session,
        kind=MatchKind.challenge,
        version_ids=version_ids,
        rated=False,
        seed=body.seed,
        requested_by=user.id,
    )
    session.commit()
    executor.submit_match(match.id)
    return respond(match_outs(session, [match])[0], status.HTTP_201_CREATED)
