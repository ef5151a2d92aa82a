"""API tokens: generated once, shown once, stored as a sha256 digest.

A token is 32 random bytes (``secrets.token_urlsafe``), so hashing it with plain sha256 is
enough: there is nothing to brute-force that a slow hash would protect.  Lookup is by the
digest's unique index, so no constant-time comparison is needed (the secret never meets a
``==`` that an attacker could time).
"""

from __future__ import annotations

import hashlib
import re
import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from .models import User

NAME_PATTERN = r"^[A-Za-z0-9_-]{2,40}$"
_NAME_RE = re.compile(NAME_PATTERN)


def new_token() -> str:
    """A fresh API token (43 URL-safe characters)."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The stored form of a token: its sha256, hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def user_for_token(session: Session, token: str) -> User | None:
    """The user holding ``token``, or None."""
    return session.scalar(select(User).where(User.token_hash == hash_token(token)))


class NameTakenError(ValueError):
    """A user of that name exists already."""


def create_user(session: Session, name: str, *, is_admin: bool = False) -> tuple[User, str]:
    """Add a user and return it with its token (the only time the token exists in clear).

    The caller commits.  Raises ``ValueError`` for a bad name, ``NameTakenError`` for a
    name in use (checked here so the CLI gets a sentence; the unique index still guards races).
    """
    if not _NAME_RE.fullmatch(name):
        raise ValueError(f"a user name is 2 to 40 letters, digits, '_' or '-', not {name!r}")
    if session.scalar(select(User.id).where(User.name == name)) is not None:
        raise NameTakenError(f"the name {name!r} is taken")
    token = new_token()
    user = User(name=name, is_admin=is_admin, token_hash=hash_token(token))
    session.add(user)
    session.flush()
    return user, token
