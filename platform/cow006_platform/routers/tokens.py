"""/api/users/me/tokens: the caller's named API tokens, made, listed, revoked and rotated.

A secret is in exactly one answer, the one that made it (create or rotate); lists show a
token's name, its first characters (``prefix``) and dates, never the secret or its hash.
Each request looks its token up in the database, so a revoked token is refused at once by
every API process.  A user may revoke the very token the request carries (logging out).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status

from .. import crud
from ..deps import CurrentUser, IdPath, SessionDep, SettingsDep
from ..schemas import Message, TokenCreate, TokenCreated, TokenList
from .common import ERR_404, ERR_409, ApiRoute, respond

router = APIRouter(prefix="/users/me/tokens", tags=["tokens"], route_class=ApiRoute)


def _current(request: Request) -> int | None:
    """The id of the token this request was made with (``deps.optional_user``)."""
    return getattr(request.state, "api_token_id", None)


@router.get("", response_model=TokenList)
def list_tokens(
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    revoked: Annotated[bool, Query(description="Include revoked and expired tokens.")] = False,
) -> Response:
    """The caller's live tokens, oldest first (with ``revoked=true``, revoked and expired ones
    too)."""
    return respond(crud.users.list_tokens(session, user, _current(request), revoked=revoked))


@router.post(
    "",
    response_model=TokenCreated,
    status_code=status.HTTP_201_CREATED,
    responses={**ERR_409},
)
def create_token(
    body: TokenCreate,
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
) -> Response:
    """Make a token.  The response holds its secret: it is shown this once."""
    made = crud.users.create_token(
        session, settings, user, body.name, body.expires_days, _current(request)
    )
    return respond(made, status.HTTP_201_CREATED)


@router.delete(
    "/{token_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={**ERR_404},
)
def revoke_token(token_id: IdPath, user: CurrentUser, session: SessionDep) -> Response:
    """Revoke one of the caller's tokens (at once, in every API process).  Revoking a
    revoked token changes nothing."""
    crud.users.revoke_token(session, user, token_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/{token_id}/rotate",
    response_model=TokenCreated,
    status_code=status.HTTP_201_CREATED,
    responses={**ERR_404, 409: {"model": Message, "description": "Revoked or expired."}},
)
def rotate_token(
    token_id: IdPath,
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
) -> Response:
    """Replace a token by a new one of the same name (and the same lifetime left), in one
    transaction: the old one is refused from the moment the new one exists."""
    made = crud.users.rotate_token(session, settings, user, token_id, _current(request))
    return respond(made, status.HTTP_201_CREATED)
