"""/api/plays: a person plays a match against built-ins or public versions, from the page.

The match is a normal, unrated one (its kind ``play``) played by a worker with the same
engine, sandbox and limits as any; the person's seat waits on the answers given here
(``crud.plays``, ``cow006_workers.human``).  A play is its player's: to anyone else it does
not exist (404).  Capped per user as challenges are: 429 with a sentence and ``Retry-After``.
"""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from .. import crud
from ..deps import CurrentUser, ExecutorDep, IdPath, SessionDep, SettingsDep
from ..models import MatchKind
from ..schemas import PlayCreate, PlayMove, PlayOut
from .common import ERR_404, ERR_409, ERR_429, ApiRoute, respond

router = APIRouter(prefix="/plays", tags=["plays"], route_class=ApiRoute)


@router.post(
    "",
    response_model=PlayOut,
    status_code=status.HTTP_201_CREATED,
    responses={**ERR_404, **ERR_409, **ERR_429},
)
def create_play(
    body: PlayCreate,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    executor: ExecutorDep,
) -> Response:
    """Start a match against ``opponents`` (``builtin:NAME`` or active version ids), the
    caller at a random seat; ``players`` seats in all (the opponents repeated to fill them)."""
    play_id = crud.plays.create(session, settings, body, user)
    play = crud.plays.get(session, play_id, user)
    executor.submit_match(play.match_id, kind=MatchKind.play)
    return respond(play, status.HTTP_201_CREATED)


@router.get("/{play_id}", response_model=PlayOut, responses=ERR_404)
def get_play(play_id: IdPath, user: CurrentUser, session: SessionDep) -> Response:
    """The play as its player sees it: the decision asked (with the seat's view and its
    deadline) while the match waits on the player."""
    return respond(crud.plays.get(session, play_id, user))


@router.post("/{play_id}/move", response_model=PlayOut, responses={**ERR_404, **ERR_409})
def move(play_id: IdPath, body: PlayMove, user: CurrentUser, session: SessionDep) -> Response:
    """Answer the decision asked: ``{"card": N}`` from the hand, or ``{"row": R}`` (0..3)
    when a row is asked (409 when nothing is asked or the decision is over)."""
    return respond(crud.plays.answer(session, play_id, user, body))
