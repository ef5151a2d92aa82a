"""/api/challenges: any user may pit 2 to 10 active versions against each other, unrated.

Each challenge runs real bot processes on the arena's workers, so asking is capped
(``workclasses.challenge_refusal``): per user and per client address, in the hour and as
challenges waiting or being played, in all, and per version of another owner, who may also
refuse challenges altogether (``Agent.accepts_challenges``).  Over a cap: 429, one sentence,
``Retry-After``.  A challenge is created held and admitted to the workers' challenge queue a
few at a time (``workclasses.admit_challenges``): a flood of them never starves the ladders.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response, status
from sqlalchemy import select
from sqlalchemy.orm import Session

from .. import results, throttle, workclasses
from ..deps import CurrentUser, ExecutorDep, SessionDep, SettingsDep
from ..models import Agent, AgentVersion, MatchKind, VersionStatus
from ..schemas import ChallengeCreate, MatchOut
from .common import ERR_403, ERR_404, ERR_409, ERR_429, conflict, get_or_404, respond
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


def _refuse(refusal: workclasses.Refusal | None) -> None:
    """Raise the refusal's 429 (or 403) with ``Retry-After``, if there is one."""
    if refusal is not None:
        headers = {"Retry-After": str(refusal.retry_after)} if refusal.retry_after else None
        raise HTTPException(refusal.status, refusal.message, headers=headers)


@router.post(
    "",
    response_model=MatchOut,
    status_code=status.HTTP_201_CREATED,
    responses={**ERR_403, **ERR_404, **ERR_409, **ERR_429},
)
def create_challenge(
    body: ChallengeCreate,
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    executor: ExecutorDep,
) -> Response:
    """Play an unrated match between the given versions (or the agents' newest active ones).

    It waits in the challenge queue; over a cap (per user, per address, in all, per opponent
    version, or an owner who refuses challenges), 429 with a sentence and ``Retry-After``."""
    address = throttle.client_address(request)
    # The caps that need no versions first: a flood's refusals cost a few indexed counts.
    _refuse(workclasses.challenge_refusal(session, settings, user.id, address))
    version_ids = _versions(session, body)
    _refuse(workclasses.opponent_refusal(session, settings, user.id, version_ids))
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
    session.commit()
    admitted = workclasses.admit_challenges(session, settings)
    session.commit()
    for match_id in admitted:
        executor.submit_match(match_id, kind=MatchKind.challenge)
    session.refresh(match)
    # The seed stays hidden from the challenger too (admins aside) until the match is over,
    # even one the challenger chose: the answer has the same shape either way.
    return respond(match_outs(session, [match], admin=user.is_admin)[0], status.HTTP_201_CREATED)
