"""/api/challenges: any user may pit 2 to 10 active versions against each other, unrated.

Each challenge runs real bot processes on the arena's workers, so asking is capped
(``workclasses.challenge_refusal``): per user and per client address, in the hour and as
challenges waiting or being played, in all, and per version of another owner, who may also
refuse challenges altogether (``Agent.accepts_challenges``).  Over a cap: 429, one sentence,
``Retry-After``.  A challenge is created held and admitted to the workers' challenge queue a
few at a time (``workclasses.admit_challenges``): a flood of them never starves the ladders.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from .. import crud, throttle
from ..deps import CurrentUser, ExecutorDep, SessionDep, SettingsDep
from ..schemas import ChallengeCreate, MatchOut
from .common import ERR_403, ERR_404, ERR_409, ERR_429, ApiRoute, respond

router = APIRouter(prefix="/challenges", tags=["challenges"], route_class=ApiRoute)


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
    match_id, admitted = crud.matches.create_challenge(session, settings, body, user, address)
    # Held matches of every class may be admitted now (an evaluation run's too): each is
    # sent to its own class's queue.
    for admitted_id, kind in crud.matches.kinds(session, admitted).items():
        executor.submit_match(admitted_id, kind=kind)
    # The seed stays hidden from the challenger too (admins aside) until the match is over,
    # even one the challenger chose: the answer has the same shape either way.
    match = crud.matches.get_match(session, match_id, admin=user.is_admin)
    return respond(match, status.HTTP_201_CREATED)
