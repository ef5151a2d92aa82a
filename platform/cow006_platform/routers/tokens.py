"""/api/users/me/tokens: the caller's named API tokens, made, listed, revoked and rotated.

A secret is in exactly one answer, the one that made it (create or rotate); lists show a
token's name, its first characters (``prefix``) and dates, never the secret or its hash.
Each request looks its token up in the database, so a revoked token is refused at once by
every API process.  A user may revoke the very token the request carries (logging out).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from .. import security
from ..deps import CurrentUser, IdPath, SessionDep, SettingsDep
from ..locks import lock
from ..models import ApiToken, User, utcnow
from ..schemas import Message, Timestamp
from .common import ERR_404, ERR_409, respond

router = APIRouter(prefix="/users/me/tokens", tags=["tokens"])

MAX_DAYS = 3650


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=security.TOKEN_NAME_PATTERN, examples=["laptop"])
    # The token stops working this many days from now; without it, it works until revoked.
    expires_days: int | None = Field(default=None, ge=1, le=MAX_DAYS)


class TokenOut(BaseModel):
    """A token as its owner sees it in a list: never the secret, never its hash."""

    id: int
    name: str
    prefix: str | None  # the secret's first characters; null for a token made before names
    created_at: Timestamp
    last_used_at: Timestamp | None
    expires_at: Timestamp | None
    revoked_at: Timestamp | None
    current: bool  # the token this request was made with

    @classmethod
    def of(cls, row: ApiToken, current_id: int | None) -> TokenOut:
        return cls(
            id=row.id,
            name=row.name,
            prefix=row.prefix,
            created_at=row.created_at,
            last_used_at=row.last_used_at,
            expires_at=row.expires_at,
            revoked_at=row.revoked_at,
            current=row.id == current_id,
        )


class TokenCreated(TokenOut):
    """A new token with its secret: shown this once, stored only as a hash."""

    token: str


class TokenList(BaseModel):
    items: list[TokenOut]


def _current(request: Request) -> int | None:
    return getattr(request.state, "api_token_id", None)


def _mine(session: SessionDep, user: User, token_id: int, *, for_update: bool = False) -> ApiToken:
    row = lock(session, ApiToken, token_id) if for_update else session.get(ApiToken, token_id)
    if row is None or row.user_id != user.id:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "you have no token with that id")
    return row


def _make(
    session: SessionDep, settings: SettingsDep, user: User, name: str, expires: datetime | None
) -> tuple[ApiToken, str]:
    """A new token, within the user's cap and unique by name among their live tokens."""
    # The user's row lock serializes their token changes: two creations cannot both pass the cap.
    lock(session, User, user.id)
    live = security.live_tokens(session, user.id)
    if any(t.name == name for t in live):
        raise HTTPException(
            status.HTTP_409_CONFLICT, f"you already have a token named {name!r}; revoke it first"
        )
    if len(live) >= settings.max_tokens_per_user:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"you have {len(live)} tokens, the most one may hold; revoke one first",
        )
    return security.add_token(session, user.id, name, expires_at=expires)


@router.get("", response_model=TokenList)
def list_tokens(
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    revoked: Annotated[bool, Query(description="Include revoked and expired tokens.")] = False,
) -> Response:
    """The caller's live tokens, oldest first (with ``revoked=true``, revoked and expired ones
    too)."""
    if revoked:
        rows = list(
            session.scalars(
                select(ApiToken).where(ApiToken.user_id == user.id).order_by(ApiToken.id)
            )
        )
    else:
        rows = security.live_tokens(session, user.id)
    current = _current(request)
    return respond(TokenList(items=[TokenOut.of(r, current) for r in rows]))


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
    expires = utcnow() + timedelta(days=body.expires_days) if body.expires_days else None
    row, secret = _make(session, settings, user, body.name, expires)
    session.commit()
    out = TokenCreated(**TokenOut.of(row, _current(request)).model_dump(), token=secret)
    return respond(out, status.HTTP_201_CREATED)


@router.delete(
    "/{token_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={**ERR_404},
)
def revoke_token(token_id: IdPath, user: CurrentUser, session: SessionDep) -> Response:
    """Revoke one of the caller's tokens (at once, in every API process).  Revoking a
    revoked token changes nothing."""
    row = _mine(session, user, token_id, for_update=True)
    security.revoke(session, row)
    session.commit()
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
    lock(session, User, user.id)  # first, as in _make: one lock order for token changes
    row = _mine(session, user, token_id, for_update=True)
    if row.revoked_at is not None:
        raise HTTPException(status.HTTP_409_CONFLICT, "this token is revoked; create a new one")
    if row.expires_at is not None and security.aware(row.expires_at) <= utcnow():
        raise HTTPException(status.HTTP_409_CONFLICT, "this token has expired; create a new one")
    security.revoke(session, row)
    session.flush()
    new, secret = _make(session, settings, user, row.name, row.expires_at)
    session.commit()
    out = TokenCreated(**TokenOut.of(new, _current(request)).model_dump(), token=secret)
    return respond(out, status.HTTP_201_CREATED)
