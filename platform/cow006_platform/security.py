"""API tokens and invite codes: generated once, shown once, stored as a sha256 digest.

A token is 32 random bytes (``secrets.token_urlsafe``), so hashing it with plain sha256 is
enough: there is nothing to brute-force that a slow hash would protect.  Lookup is by the
digest's unique index, so no constant-time comparison is needed (the secret never meets a
``==`` that an attacker could time).

A user holds any number of named tokens (``api_tokens``, up to ``max_tokens_per_user`` live
ones); each request looks its token up in the database (``token_owner``), so revoking one, or
disabling its user, holds at once in every API process: there is no cache to invalidate.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, select, update
from sqlalchemy.orm import Session

from .models import ApiToken, Invite, User, utcnow

NAME_PATTERN = r"^[A-Za-z0-9_-]{2,40}$"
_NAME_RE = re.compile(NAME_PATTERN)
TOKEN_NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,40}$"
_TOKEN_NAME_RE = re.compile(TOKEN_NAME_PATTERN)
PREFIX_CHARS = 8  # of a secret, shown in lists (48 bits: enough to tell tokens apart)
FIRST_TOKEN = "default"  # the name of the token a user is created with
# ``last_used_at`` is written when it is older than this: one UPDATE a minute per token in use,
# not one per request.
TOUCH_SECONDS = 60.0


def new_token() -> str:
    """A fresh API token (43 URL-safe characters)."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The stored form of a token (or invite code): its sha256, hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def token_owner(session: Session, token: str) -> tuple[User, ApiToken] | None:
    """The user holding ``token`` and the token's row, if it is live (not revoked, not expired).

    The user may be disabled or pending: the caller refuses those with a sentence of its own.
    """
    row = session.execute(
        select(User, ApiToken)
        .join(ApiToken, ApiToken.user_id == User.id)
        .where(ApiToken.hash == hash_token(token), ApiToken.revoked_at.is_(None))
    ).first()
    if row is None:
        return None
    user, api_token = row
    if api_token.expires_at is not None and aware(api_token.expires_at) <= utcnow():
        return None
    return user, api_token


def touch(session: Session, api_token: ApiToken) -> None:
    """Record that ``api_token`` was used (at most once per ``TOUCH_SECONDS``); commits."""
    now = utcnow()
    last = api_token.last_used_at
    if last is not None and (now - aware(last)).total_seconds() < TOUCH_SECONDS:
        return
    session.execute(update(ApiToken).where(ApiToken.id == api_token.id).values(last_used_at=now))
    session.commit()


def user_for_token(session: Session, token: str) -> User | None:
    """The user holding live ``token`` if their account is active (not disabled, not
    pending), else None."""
    found = token_owner(session, token)
    if found is None or found[0].disabled or found[0].pending:
        return None
    return found[0]


def aware(stamp: datetime) -> datetime:
    """``stamp`` with UTC attached when the database dropped it (SQLite)."""
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


class NameTakenError(ValueError):
    """A user of that name exists already."""


def create_user(
    session: Session, name: str, *, is_admin: bool = False, pending: bool = False
) -> tuple[User, str]:
    """Add a user with its first token ("default") and return both (the only time the token
    exists in clear).

    The caller commits.  Raises ``ValueError`` for a bad name, ``NameTakenError`` for a
    name in use (checked here so the CLI gets a sentence; the unique index still guards races).
    """
    if not _NAME_RE.fullmatch(name):
        raise ValueError(f"a user name is 2 to 40 letters, digits, '_' or '-', not {name!r}")
    if session.scalar(select(User.id).where(User.name == name)) is not None:
        raise NameTakenError(f"the name {name!r} is taken")
    token = new_token()
    digest = hash_token(token)
    user = User(name=name, is_admin=is_admin, pending=pending, token_hash=digest)
    session.add(user)
    session.flush()
    session.add(
        ApiToken(user_id=user.id, name=FIRST_TOKEN, prefix=token[:PREFIX_CHARS], hash=digest)
    )
    session.flush()
    return user, token


def live_tokens(session: Session, user_id: int) -> list[ApiToken]:
    """The user's tokens that are neither revoked nor expired, oldest first."""
    now = utcnow()
    rows = session.scalars(
        select(ApiToken)
        .where(ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None))
        .order_by(ApiToken.id)
    ).all()
    return [t for t in rows if t.expires_at is None or aware(t.expires_at) > now]


def check_token_name(name: str) -> str:
    if not _TOKEN_NAME_RE.fullmatch(name):
        raise ValueError(f"a token name is 1 to 40 letters, digits, '.', '_' or '-', not {name!r}")
    return name


def add_token(
    session: Session, user_id: int, name: str, *, expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """A new token for the user, and its secret (shown this once).  The caller commits."""
    token = new_token()
    row = ApiToken(
        user_id=user_id,
        name=check_token_name(name),
        prefix=token[:PREFIX_CHARS],
        hash=hash_token(token),
        expires_at=expires_at,
    )
    session.add(row)
    session.flush()
    return row, token


def revoke(session: Session, api_token: ApiToken) -> None:
    """Revoke one token (no-op if it is already).  The caller commits."""
    if api_token.revoked_at is None:
        api_token.revoked_at = utcnow()


def revoke_all(session: Session, user_id: int) -> int:
    """Revoke every live token of the user; how many.  The caller commits."""
    # An UPDATE answers a CursorResult (it has the rowcount); Session.execute is typed as
    # answering any Result.
    result = cast(
        CursorResult[Any],
        session.execute(
            update(ApiToken)
            .where(ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        ),
    )
    return int(result.rowcount or 0)


# --- invite codes ---------------------------------------------------------------------------


def create_invite(
    session: Session, uses: int = 1, *, days: float | None = None, note: str | None = None
) -> tuple[Invite, str]:
    """A new invite code good for ``uses`` registrations (for ``days``, if given)."""
    if uses < 1:
        raise ValueError("an invite is good for at least 1 registration")
    code = secrets.token_urlsafe(18)
    expires = utcnow() + timedelta(days=days) if days is not None else None
    invite = Invite(
        code_hash=hash_token(code),
        prefix=code[:PREFIX_CHARS],
        uses=uses,
        uses_left=uses,
        note=note,
        expires_at=expires,
    )
    session.add(invite)
    session.flush()
    return invite, code


def use_invite(session: Session, code: str) -> bool:
    """Take one use of invite ``code``, in the caller's transaction: True if it had one left.

    One conditional UPDATE: two registrations racing for the last use cannot both get it, and
    a registration that then fails (a taken name) rolls the use back with itself.
    """
    now = utcnow()
    invite = session.scalar(select(Invite).where(Invite.code_hash == hash_token(code)))
    if invite is None or (invite.expires_at is not None and aware(invite.expires_at) <= now):
        return False
    result = cast(
        CursorResult[Any],  # an UPDATE's result, as in revoke_all
        session.execute(
            update(Invite)
            .where(Invite.id == invite.id, Invite.uses_left > 0)
            .values(uses_left=Invite.uses_left - 1)
            .execution_options(synchronize_session=False)
        ),
    )
    return bool(result.rowcount)
