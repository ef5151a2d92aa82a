"""FastAPI dependencies: a database session per request, the caller, settings, the executor.

The caller is whoever's token is in ``Authorization: Bearer TOKEN``.  Anonymous callers may
read public resources; a token that is present but unknown is a 401 everywhere (a client with
a stale token should learn so, not silently see the anonymous view).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Query, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from .executor import Executor
from .models import User
from .schemas import MAX_ID, MAX_OFFSET
from .security import user_for_token
from .settings import Settings

_bearer = HTTPBearer(auto_error=False, description="The API token from POST /api/users.")


READ_METHODS = frozenset({"GET", "HEAD"})


async def get_session(request: Request) -> AsyncIterator[Session]:
    """One session per request; routes commit what they change, the rest is rolled back.

    GET and HEAD get an autocommit session (routes that only read: no transaction to open
    and roll back); the other methods a transactional one.

    The dependencies are ``async`` on purpose: FastAPI runs every sync dependency in the
    thread pool, one hop each, which costs more than the work of these.  Creating a session
    does no I/O.  Closing it hands its connection back to the pool: no I/O either once its
    transaction is over (committed, or autocommit), one ROLLBACK round trip for a route that
    raised mid-transaction.  That is done here on the event loop, never by waiting for a
    thread while holding a connection (threads may be waiting for connections).
    """
    state = request.app.state
    factory = (
        state.read_session_factory if request.method in READ_METHODS else state.session_factory
    )
    with factory() as session:
        yield session


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_executor(request: Request) -> Executor:
    executor: Executor = request.app.state.executor
    return executor


SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
ExecutorDep = Annotated[Executor, Depends(get_executor)]


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED, detail, headers={"WWW-Authenticate": "Bearer"}
    )


def _lookup_user(factory: sessionmaker[Session], token: str) -> User | None:
    with factory() as session:
        return user_for_token(session, token)


async def optional_user(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> User | None:
    """The caller, or None for an anonymous request (which costs no query).

    The token is looked up in a session of its own, closed at once: the request's session
    then holds a connection only while its route runs (see ``get_session``).  The User comes
    back detached, its columns loaded; routes read them and never change the caller's row.
    """
    if credentials is None:
        return None
    factory = request.app.state.read_session_factory
    user = await run_in_threadpool(_lookup_user, factory, credentials.credentials)
    if user is None:
        raise _unauthorized("invalid API token")
    return user


async def current_user(user: Annotated[User | None, Depends(optional_user)]) -> User:
    """The caller, who must have sent a valid token."""
    if user is None:
        raise _unauthorized("this needs an API token (Authorization: Bearer TOKEN)")
    return user


async def admin_user(user: Annotated[User, Depends(current_user)]) -> User:
    """The caller, who must be an admin."""
    if not user.is_admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "admins only")
    return user


OptionalUser = Annotated[User | None, Depends(optional_user)]
CurrentUser = Annotated[User, Depends(current_user)]
AdminUser = Annotated[User, Depends(admin_user)]


@dataclass
class Paging:
    """``?limit=&offset=``: the page size is capped by ``settings.max_page_size``."""

    limit: int
    offset: int


async def get_paging(
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="Items per page.")] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Items to skip.")] = 0,
) -> Paging:
    return Paging(min(limit, settings.max_page_size), offset)


PagingDep = Annotated[Paging, Depends(get_paging)]

# Path and query ids, bounded to what the databases can hold (see schemas.MAX_ID).
IdPath = Annotated[int, Path(ge=1, le=MAX_ID)]
IdQuery = Annotated[int | None, Query(ge=1, le=MAX_ID)]
