"""Web sessions: a browser signed in by an HttpOnly cookie, and the CSRF tokens of its forms.

Signing in on ``/login`` (with an API token) or registering on the site opens a session: a
fresh secret (32 random bytes) goes into the ``cow006_session`` cookie (HttpOnly, SameSite=Lax,
Secure over https), and only its sha256 is stored (``web_sessions``), with the user, the API
token the session was opened with, and when it ends (``settings.session_hours``).  A session
holds while that token does: revoking the token (or its expiry, or disabling the user) ends
every session opened with it.  Signing out deletes the row.

Every state-changing form POST carries a CSRF token in a hidden field (``csrf``):

* for a signed-in browser, an HMAC of the session's secret (nobody without the cookie can
  compute it, and the cookie is HttpOnly);
* before signing in (the sign-in and registration forms), a double-submit token: a random
  value in the ``cow006_csrf`` cookie that the field must repeat (another site can make the
  browser send the cookie, but cannot read it to put it in the field).

SameSite=Lax alone is not relied on: it does not cover same-site subdomains nor older browsers.
Secrets are compared in constant time; malformed cookies are refused before any query.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from .models import ApiToken, User, WebSession, utcnow
from .security import aware, hash_token

COOKIE = "cow006_session"
CSRF_COOKIE = "cow006_csrf"
CSRF_FIELD = "csrf"
# Ours are 43 URL-safe characters; anything else in the cookie is no session of this arena.
_SECRET = re.compile(r"^[A-Za-z0-9_-]{32,64}$")
_CSRF_KEY = b"cow006 web form"


@dataclass(frozen=True)
class SignedIn:
    """The signed-in browser's user (detached, its columns loaded) and its session secret."""

    user: User
    secret: str


def well_formed(value: str | None) -> bool:
    """Whether a cookie value could be a secret of ours (checked before any query)."""
    return value is not None and _SECRET.fullmatch(value) is not None


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def open_session(session: Session, user_id: int, token_id: int, hours: float) -> str:
    """A new session for the user, opened with API token ``token_id``; returns its secret
    (the only time it exists in clear).  Drops every expired session (indexed: each sign-in
    sweeps what ran out since the last one).  Commits."""
    now = utcnow()
    session.execute(delete(WebSession).where(WebSession.expires_at <= now))
    secret = new_secret()
    session.add(
        WebSession(
            hash=hash_token(secret),
            user_id=user_id,
            token_id=token_id,
            expires_at=now + timedelta(hours=hours),
        )
    )
    session.commit()
    return secret


def find(session: Session, secret: str) -> User | None:
    """The user of live session ``secret``, if the session, its token and the account all
    hold (not expired, not revoked, not disabled or pending); else None."""
    if not well_formed(secret):
        return None
    row = session.execute(
        select(User, WebSession, ApiToken)
        .join(WebSession, WebSession.user_id == User.id)
        .join(ApiToken, ApiToken.id == WebSession.token_id)
        .where(WebSession.hash == hash_token(secret), ApiToken.revoked_at.is_(None))
    ).first()
    if row is None:
        return None
    user, web, token = row
    now = utcnow()
    if aware(web.expires_at) <= now:
        return None
    if token.expires_at is not None and aware(token.expires_at) <= now:
        return None
    if user.disabled or user.pending:
        return None
    session.expunge(user)
    return user


def close_session(session: Session, secret: str) -> None:
    """Sign out: delete session ``secret`` (no-op for an unknown one).  Commits."""
    if well_formed(secret):
        session.execute(delete(WebSession).where(WebSession.hash == hash_token(secret)))
        session.commit()


def csrf_of(secret: str) -> str:
    """The CSRF token of a signed-in browser's forms: an HMAC of its session secret."""
    return hmac.new(_CSRF_KEY, secret.encode(), hashlib.sha256).hexdigest()[:40]


def same(expected: str | None, given: str | None) -> bool:
    """Whether a form's CSRF field matches what was expected (constant time)."""
    if not expected or not given or len(given) > 128:
        return False
    return hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace"))
