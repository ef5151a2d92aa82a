"""FastAPI dependencies: a database session per request, the caller, settings, the executor.

The caller is whoever's token is in ``Authorization: Bearer TOKEN``.  Anonymous callers may
read public resources; a token that is present but unknown is a 401 everywhere (a client with
a stale token should learn so, not silently see the anonymous view).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Query, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from .executor import Executor
from .models import User
from .schemas import MAX_ID, MAX_OFFSET
from .security import user_for_token
from .settings import Settings

_bearer = HTTPBearer(auto_error=False, description="The API token from POST /api/users.")


READ_METHODS = frozenset({"GET", "HEAD"})


def get_session(request: Request) -> Iterator[Session]:
    """One session per request; routes commit what they change, the rest is rolled back.

    GET and HEAD get an autocommit session (routes that only read: no transaction to open
    and roll back); the other methods a transactional one.
    """
    state = request.app.state
    factory = (
        state.read_session_factory if request.method in READ_METHODS else state.session_factory
    )
    with factory() as session:
        yield session


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_executor(request: Request) -> Executor:
    executor: Executor = request.app.state.executor
    return executor


SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
ExecutorDep = Annotated[Executor, Depends(get_executor)]


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED, detail, headers={"WWW-Authenticate": "Bearer"}
    )


def optional_user(
    session: SessionDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> User | None:
    """The caller, or None for an anonymous request."""
    if credentials is None:
        return None
    user = user_for_token(session, credentials.credentials)
    if user is None:
        raise _unauthorized("invalid API token")
    return user


def current_user(user: Annotated[User | None, Depends(optional_user)]) -> User:
    """The caller, who must have sent a valid token."""
    if user is None:
        raise _unauthorized("this needs an API token (Authorization: Bearer TOKEN)")
    return user


def admin_user(user: Annotated[User, Depends(current_user)]) -> User:
    """The caller, who must be an admin."""
    if not user.is_admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "admins only")
    return user


OptionalUser = Annotated[User | None, Depends(optional_user)]
CurrentUser = Annotated[User, Depends(current_user)]
AdminUser = Annotated[User, Depends(admin_user)]


class Paging:
    """``?limit=&offset=``: the page size is capped by ``settings.max_page_size``."""

    def __init__(
        self,
        settings: SettingsDep,
        limit: Annotated[int, Query(ge=1, le=1000, description="Items per page.")] = 50,
        offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Items to skip.")] = 0,
    ) -> None:
        self.limit = min(limit, settings.max_page_size)
        self.offset = offset


PagingDep = Annotated[Paging, Depends()]

# Path and query ids, bounded to what the databases can hold (see schemas.MAX_ID).
IdPath = Annotated[int, Path(ge=1, le=MAX_ID)]
IdQuery = Annotated[int | None, Query(ge=1, le=MAX_ID)]
