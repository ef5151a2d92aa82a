"""FastAPI dependencies: a database session per request, the caller, settings, the executor.

The caller is whoever's token is in ``Authorization: Bearer TOKEN``.  Anonymous callers (no
Authorization header at all) may read public resources.  Any Authorization header that is not
one live token is a 401 everywhere: a token unknown, revoked or expired, an empty ``Bearer ``,
another scheme, garbage (a client with a bad token should learn so, not silently see the
anonymous view).  A disabled or pending user's token is a 403 with the reason.  Refused tokens
are counted per client address (``throttle``): past the limit, that address gets 429.

The web pages read their signed-in user from the session cookie instead (``web_user``,
``websession``): the API never does, so a cookie cannot make a cross-site request act as
its owner there.

The OpenAPI document says which operations need a token (``current_user``), which take one
optionally (``OptionalUser``) and which are public (``document_security``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Path, Query, Request, Security, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from . import security, throttle, websession
from .crud import Paging
from .executor import Executor
from .models import ApiToken, User
from .schemas import MAX_ID, MAX_OFFSET
from .settings import Settings

logger = logging.getLogger(__name__)

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


MAX_TOKEN_CHARS = 256  # ours are 43; anything longer is not a token of this arena
MALFORMED = "the Authorization header must be 'Bearer TOKEN' (send none to read anonymously)"


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED, detail, headers={"WWW-Authenticate": "Bearer"}
    )


def bearer_token(values: list[str]) -> str | None:
    """The token of the request's Authorization header(s), or None if they are malformed:
    not exactly one header, another scheme than Bearer, an empty or oversized token, or one
    with spaces or characters outside printable ASCII."""
    if len(values) != 1:
        return None
    scheme, _, token = values[0].strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_CHARS:
        return None
    if not token.isascii() or not token.isprintable() or " " in token:
        return None
    return token


def _lookup(factory: sessionmaker[Session], token: str) -> tuple[User, ApiToken] | None:
    with factory() as session:
        found = security.token_owner(session, token)
        if found is not None:
            try:
                security.touch(session, found[1])
            except SQLAlchemyError:  # last_used_at is a hint: no reason to refuse a request
                logger.warning("could not record the use of API token %d", found[1].id)
                session.rollback()
        return found


def _blocklist(request: Request) -> throttle.Blocklist:
    state = request.app.state
    blocklist: throttle.Blocklist | None = getattr(state, "auth_blocklist", None)
    if blocklist is None:
        blocklist = state.auth_blocklist = throttle.Blocklist()
    return blocklist


async def _refused(request: Request, address: str, detail: str) -> HTTPException:
    """The answer to a refused token: 401, or 429 once ``address`` is past its limit."""
    settings: Settings = request.app.state.settings
    limit = settings.auth_failures_per_minute_per_address
    if limit > 0:
        factory = request.app.state.session_factory
        counted = await run_in_threadpool(
            throttle.bump, factory, throttle.AUTH_FAILURE, address, 60
        )
        if counted.count > limit:
            _blocklist(request).block(address, counted.retry_after)
            return _too_many_failures(counted.retry_after)
    return _unauthorized(detail)


def _too_many_failures(retry_after: int) -> HTTPException:
    return throttle.too_many(
        f"too many refused API tokens from your address; try again in {retry_after} s",
        retry_after,
    )


def blocked(request: Request, address: str) -> HTTPException | None:
    """The 429 of an address past its limit of refused tokens, or None."""
    wait = _blocklist(request).retry_after(address)
    return None if wait is None else _too_many_failures(wait)


async def refused_token(request: Request, address: str, detail: str) -> HTTPException:
    """Count a refused token of ``address`` (the sign-in form counts with the API): the 401
    to answer, or the 429 once the address is past its limit."""
    return await _refused(request, address, detail)


async def optional_user(request: Request) -> User | None:
    """The caller, or None for an anonymous request (no Authorization header; no query).

    The token is looked up in a session of its own, closed at once: the request's session
    then holds a connection only while its route runs (see ``get_session``).  The User comes
    back detached, its columns loaded; routes read them and never change the caller's row.
    The id of the token used is left in ``request.state.api_token_id``.
    """
    values = request.headers.getlist("authorization")
    if not values:
        return None
    address = throttle.client_address(request)
    wait = _blocklist(request).retry_after(address)
    if wait is not None:
        raise _too_many_failures(wait)
    token = bearer_token(values)
    if token is None:
        raise await _refused(request, address, MALFORMED)
    factory = request.app.state.read_session_factory
    found = await run_in_threadpool(_lookup, factory, token)
    if found is None:
        raise await _refused(request, address, "invalid API token (unknown, revoked or expired)")
    user, api_token = found
    if user.disabled:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"the account {user.name} is disabled; ask the arena's admins",
        )
    if user.pending:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"the account {user.name} is waiting for an admin's approval",
        )
    request.state.api_token_id = api_token.id
    return user


# Documentation only: the security scheme in the OpenAPI document.  optional_user reads the
# header itself (HTTPBearer would take an empty "Bearer " or another scheme for anonymous).
# Routes that take a token optionally name a second scheme, which ``document_security``
# rewrites into "anonymous, or HTTPBearer".
_bearer = HTTPBearer(
    auto_error=False, description="An API token (POST /api/users, /api/users/me/tokens)."
)
_optional_bearer = HTTPBearer(auto_error=False, scheme_name="HTTPBearerOptional")
SchemeDoc = Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)]
OptionalSchemeDoc = Annotated[HTTPAuthorizationCredentials | None, Security(_optional_bearer)]


async def optional_caller(
    user: Annotated[User | None, Depends(optional_user)], _doc: OptionalSchemeDoc
) -> User | None:
    """The caller if a token was sent (a route that shows its owner more), else None."""
    return user


async def current_user(
    user: Annotated[User | None, Depends(optional_user)], _doc: SchemeDoc
) -> User:
    """The caller, who must have sent a valid token."""
    if user is None:
        raise _unauthorized("this needs an API token (Authorization: Bearer TOKEN)")
    return user


async def admin_user(user: Annotated[User, Depends(current_user)]) -> User:
    """The caller, who must be an admin."""
    if not user.is_admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "admins only")
    return user


OptionalUser = Annotated[User | None, Depends(optional_caller)]
CurrentUser = Annotated[User, Depends(current_user)]
AdminUser = Annotated[User, Depends(admin_user)]


def document_security(app: FastAPI) -> None:
    """Make the OpenAPI document say, per operation, whether a token is needed.

    ``optional_user`` runs on every operation under /api but declares no scheme, so public
    operations carry no security requirement.  Those that need a token require
    ``HTTPBearer``; those that take one optionally (``OptionalUser``) list ``{}`` (anonymous)
    and ``HTTPBearer``.
    """
    generate = app.openapi
    required = _bearer.scheme_name
    optional = _optional_bearer.scheme_name

    done: list[dict[str, Any]] = []

    def openapi() -> dict[str, Any]:
        # Rewritten once: FastAPI hands back the same cached dict on every call, and a second
        # rewrite read the first one's output (optional operations then said "token needed").
        if done:
            return done[0]
        schema = generate()
        for operations in schema.get("paths", {}).values():
            for op in operations.values():
                names = {name for req in op.get("security", []) for name in req}
                if required in names:
                    op["security"] = [{required: []}]
                elif optional in names:
                    op["security"] = [{}, {required: []}]
        schemes = schema.get("components", {}).get("securitySchemes", {})
        schemes.pop(optional, None)
        done.append(schema)
        return schema

    # FastAPI's documented way to change the schema is to replace the method.
    app.openapi = openapi  # type: ignore[method-assign]


async def get_paging(
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="Items per page.")] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Items to skip.")] = 0,
) -> Paging:
    """``?limit=&offset=``: the page size is capped by ``settings.max_page_size``."""
    return Paging(min(limit, settings.max_page_size), offset)


PagingDep = Annotated[Paging, Depends(get_paging)]

# Path and query ids, bounded to what the databases can hold (see schemas.MAX_ID).
IdPath = Annotated[int, Path(ge=1, le=MAX_ID)]
IdQuery = Annotated[int | None, Query(ge=1, le=MAX_ID)]


# --- the web pages' signed-in user (the session cookie) ------------------------------------


def _session_user(factory: sessionmaker[Session], secret: str) -> User | None:
    with factory() as session:
        return websession.find(session, secret)


async def web_user(request: Request) -> websession.SignedIn | None:
    """The browser's signed-in user from its session cookie, or None (no cookie, a malformed
    one, or a session that ended: the page is then the anonymous one, never an error).

    Left in ``request.state.signed_in`` for the templates; looked up once per request.
    """
    state = request.state
    if hasattr(state, "signed_in"):
        found: websession.SignedIn | None = state.signed_in
        return found
    state.signed_in = None
    secret = request.cookies.get(websession.COOKIE)
    if secret is None or not websession.well_formed(secret):
        return None
    factory = request.app.state.read_session_factory
    user = await run_in_threadpool(_session_user, factory, secret)
    if user is not None:
        state.signed_in = websession.SignedIn(user, secret)
    return state.signed_in


WebUser = Annotated[websession.SignedIn | None, Depends(web_user)]
