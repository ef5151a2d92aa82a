"""Users and their API tokens: registration (invite codes, approval), public profiles, and
the caller's own tokens, made, listed, revoked and rotated.

A secret is in exactly one answer, the one that made it (registration, a new or rotated
token); lists show a token's name, its first characters and dates, never the secret or its
hash.  Each request looks its token up in the database (``deps``), so a revoked token is
refused at once by every API process.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from .. import security
from ..locks import lock
from ..models import ApiToken, User, utcnow
from ..schemas import Page, TokenCreated, TokenList, UserCreate, UserCreated, UserPublic
from ..settings import Settings
from ._errors import Conflict, Forbidden, NotFound, get
from ._rows import Paging, fields, paged


def list_users(session: Session, paging: Paging) -> Page[UserPublic]:
    """All users, oldest first."""
    return paged(session, UserPublic, select(User).order_by(User.id), paging)


def get_user(session: Session, user_id: int) -> UserPublic:
    return UserPublic.model_validate(get(session, User, user_id, "user"), from_attributes=True)


def register(session: Session, settings: Settings, body: UserCreate) -> UserCreated:
    """A new user and its first API token, as ``settings.registration`` allows: open, by
    invite code, or pending until an admin approves it."""
    if settings.registration == "invite":
        if body.invite is None:
            raise Forbidden(
                "this arena registers by invitation: send the invite code its admins gave you "
                'as "invite"'
            )
        if not security.use_invite(session, body.invite):
            raise Forbidden("this invite code is unknown, used up or expired")
    pending = settings.registration == "approval"
    try:
        user, token = security.create_user(session, body.name, pending=pending)
        session.commit()
    except (security.NameTakenError, IntegrityError) as exc:  # IntegrityError: a concurrent twin
        session.rollback()  # gives the invite's use back too
        raise Conflict(f"the name {body.name!r} is taken") from exc
    return UserCreated.model_validate({**fields(user), "token": token, "pending": pending})


# --- the caller's tokens -----------------------------------------------------------------


def _token(row: ApiToken, current: int | None) -> dict[str, object]:
    """A token's fields as its owner sees them (``current``: the id of the request's token)."""
    return {**fields(row), "current": row.id == current}


def list_tokens(session: Session, user: User, current: int | None, *, revoked: bool) -> TokenList:
    """The user's live tokens, oldest first (with ``revoked``, revoked and expired ones too)."""
    if revoked:
        query = select(ApiToken).where(ApiToken.user_id == user.id).order_by(ApiToken.id)
        rows = list(session.scalars(query))
    else:
        rows = security.live_tokens(session, user.id)
    return TokenList.model_validate({"items": [_token(r, current) for r in rows]})


def _mine(session: Session, user: User, token_id: int) -> ApiToken:
    row = lock(session, ApiToken, token_id)
    if row is None or row.user_id != user.id:
        raise NotFound("you have no token with that id")
    return row


def _add(
    session: Session, settings: Settings, user: User, name: str, expires: datetime | None
) -> tuple[ApiToken, str]:
    """A new token, within the user's cap and unique by name among their live tokens."""
    live = security.live_tokens(session, user.id)
    if any(t.name == name for t in live):
        raise Conflict(f"you already have a token named {name!r}; revoke it first")
    if len(live) >= settings.max_tokens_per_user:
        raise Conflict(f"you have {len(live)} tokens, the most one may hold; revoke one first")
    return security.add_token(session, user.id, name, expires_at=expires)


def create_token(
    session: Session,
    settings: Settings,
    user: User,
    name: str,
    expires_days: int | None,
    current: int | None,
) -> TokenCreated:
    """A new token of the user's (its secret in this answer only)."""
    expires = utcnow() + timedelta(days=expires_days) if expires_days else None
    # The user's row lock serializes their token changes: two creations cannot both pass the cap.
    lock(session, User, user.id)
    row, secret = _add(session, settings, user, name, expires)
    session.commit()
    return TokenCreated.model_validate({**_token(row, current), "token": secret})


def revoke_token(session: Session, user: User, token_id: int) -> None:
    """Revoke one of the user's tokens (revoking a revoked token changes nothing)."""
    security.revoke(session, _mine(session, user, token_id))
    session.commit()


def rotate_token(
    session: Session, settings: Settings, user: User, token_id: int, current: int | None
) -> TokenCreated:
    """Replace a token by a new one of the same name and lifetime left, in one transaction:
    the old one is refused from the moment the new one exists."""
    lock(session, User, user.id)  # first, as in create_token: one lock order for token changes
    row = _mine(session, user, token_id)
    if row.revoked_at is not None:
        raise Conflict("this token is revoked; create a new one")
    if row.expires_at is not None and security.aware(row.expires_at) <= utcnow():
        raise Conflict("this token has expired; create a new one")
    security.revoke(session, row)
    session.flush()
    new, secret = _add(session, settings, user, row.name, row.expires_at)
    session.commit()
    return TokenCreated.model_validate({**_token(new, current), "token": secret})


def pending(session: Session) -> list[tuple[str, datetime]]:
    """The users waiting for an admin's approval (name, registered), oldest first."""
    query = select(User.name, User.created_at).where(User.pending.is_(True)).order_by(User.id)
    return [(name, created) for name, created in session.execute(query)]
