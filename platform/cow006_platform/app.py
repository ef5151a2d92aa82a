"""The FastAPI application: ``create_app`` wires settings, database, executor and routers.

The executor is always given: the Celery workers' in production (``cow006 api``: the
factory ``cow006_workers.serve:api_app``), the worker code run in this process on a single
machine (``uvicorn --factory cow006_workers.embedded:embedded_app``): the platform itself
never plays a match.  The REST API lives under ``/api`` (OpenAPI at ``/docs`` and
``/openapi.json``); every error there is JSON ``{"detail": ...}``, and an HTML page anywhere
else on the site (``answers``: also HEAD and gzip).  On startup the database schema
is brought up to date (Alembic migrations when the package has them, else
``metadata.create_all`` for a fresh database).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import Engine
from starlette.exceptions import HTTPException as StarletteHTTPException

from cow006.untrusted import clean_data

from . import crud, db, debris, models
from .answers import GZIP_LEVEL, GZIP_MIN_BYTES, GZip, HeadAsGet, is_api, page_sentence
from .cache import PageCache, PublicCacheMiddleware
from .deps import document_security, optional_user, web_user
from .executor import Executor
from .limits import RequestLimits, strict_query
from .routers import (
    agents,
    challenges,
    evaluations,
    ladders,
    leagues,
    matches,
    ops,
    plays,
    tokens,
    users,
)
from .routers.common import ERR_400, ERR_401, ERR_403, ERR_429
from .settings import Settings
from .web import apidocs
from .web import router as web_router
from .web.routes import error_page

MIGRATIONS = Path(__file__).parent / "migrations" / "versions"
ECHO_LIMIT = 200  # characters of a caller's input echoed back in a 422


def prepare_database(settings: Settings, engine: Engine) -> None:
    """Create or upgrade the schema: migrations once they exist, else ``create_all``."""
    if any(MIGRATIONS.glob("*.py")):
        from . import migrate  # imported late: Alembic is only needed when migrations exist

        migrate.upgrade(settings.database_url)
    else:
        models.Base.metadata.create_all(engine)


def api_router() -> APIRouter:
    # optional_user on every route: a request with an unknown token is a 401 even on public
    # endpoints (FastAPI caches it per request, so routes that need the user pay once).
    # strict_query first: a query parameter the route does not read, or one given twice, is
    # a 422 (limits.py; the page cache keys on what the route reads).
    api = APIRouter(
        prefix="/api",
        dependencies=[Depends(strict_query), Depends(optional_user)],
        responses={**ERR_400, **ERR_401, **ERR_403, **ERR_429},
    )
    for module in (
        users,
        tokens,
        agents,
        ladders,
        leagues,
        challenges,
        evaluations,
        plays,
        matches,
    ):
        api.include_router(module.router)
    return api


def create_app(settings: Settings, executor: Executor) -> FastAPI:
    """The arena's app, handing its matches and validations to ``executor`` (which belongs
    to the caller: the app never closes it)."""
    engine = db.make_engine(settings.database_url)
    session_factory = db.make_sessionmaker(engine)
    # GET requests only read: their sessions run in autocommit mode on a pool of their own,
    # which saves the BEGIN and ROLLBACK round trips of a transaction per page view.
    read_engine = db.make_engine(settings.database_url, isolation_level="AUTOCOMMIT")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        prepare_database(settings, engine)
        # What a crashed upload left behind (old temporary folders, bot folders no version
        # refers to); a failure here must not keep the API from starting.
        try:
            await anyio.to_thread.run_sync(debris.collect, settings, session_factory)
        except Exception:
            logging.getLogger(__name__).exception("the crash leftovers could not be removed")
        # Fewer threads than anyio's default 40: the routes are short and CPU-bound between
        # queries, and dozens of threads fighting for the GIL slow every request down;
        # waiting requests queue on the event loop instead (``COW006_API_THREADS``).
        threads = settings.api_threads
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        page_cache = app.state.page_cache
        if page_cache is not None:
            await page_cache.start()
        try:
            yield
        finally:
            if page_cache is not None:
                await page_cache.stop()
            engine.dispose()
            read_engine.dispose()

    app = FastAPI(
        title="Корова 006 arena",
        summary="Upload 6 nimmt! bots, enter ladders and leagues, challenge, read match logs.",
        version="1.0.0",
        lifespan=lifespan,
        # /docs and /redoc come from the package's own files (web/apidocs.py), not a CDN.
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.session_factory = session_factory
    app.state.read_session_factory = db.make_sessionmaker(read_engine)
    app.state.executor = executor
    app.state.page_cache = (
        PageCache(
            app.state.read_session_factory,
            max_bytes=settings.cache_bytes,
            poll_seconds=settings.cache_poll_seconds,
            max_age=settings.cache_max_age,
            warm_pages=settings.cache_warm_pages,
            stale_seconds=settings.cache_stale_seconds,
            warm=crud.ladders.warm_keys,
        )
        if settings.public_cache
        else None
    )
    app.add_middleware(PublicCacheMiddleware)
    # Outside the cache: body caps and anonymous uploads are refused before anything else.
    app.add_middleware(RequestLimits)
    # Outside both: what the cache answers compressed passes through (Content-Encoding set).
    app.add_middleware(GZip, minimum_size=GZIP_MIN_BYTES, compresslevel=GZIP_LEVEL)
    app.add_middleware(HeadAsGet)  # outermost: everything inside sees the GET
    app.include_router(api_router())
    app.include_router(web_router)
    app.include_router(apidocs.router)
    ops.install(app)  # /healthz, /readyz, /metrics (outside /api and the schema)
    document_security(app)  # public operations carry no security requirement

    async def page_error(request: Request, code: int, detail: object, headers: Any) -> Response:
        """An error of the site's pages: error.html, the header knowing who is signed in."""
        try:
            await web_user(request)
        except Exception:  # the database is down: the error page still renders
            request.state.signed_in = None
        return error_page(request, HTTPException(code, page_sentence(code, detail), headers))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        # A route's own error, an unknown path (404) or a method it does not take (405).
        if is_api(request.url.path):
            return await http_exception_handler(request, exc)
        return await page_error(request, exc.status_code, exc.detail, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        if not is_api(request.url.path):  # a page's query: one sentence, nothing echoed
            return await page_error(request, 422, None, None)
        # FastAPI's own 422 echoes the input, and the input is the caller's: a lone surrogate
        # ("\\ud800", which json.loads accepts) cannot be encoded, and the answer was a 500.
        # Every string of the errors is cleaned and bounded (a 64 KiB value is not echoed).
        detail = clean_data(jsonable_encoder(exc.errors()), ECHO_LIMIT)
        return JSONResponse({"detail": detail}, status_code=422)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> Response:
        # A bug, not bad input: the client gets the error without the details (Starlette
        # re-raises the exception after this, so the server logs it).
        if not is_api(request.url.path):
            try:
                request.state.signed_in = None  # no database call from a failing request
                return error_page(request, HTTPException(500, page_sentence(500, None)))
            except Exception:
                logging.getLogger(__name__).exception("the error page could not be rendered")
        return JSONResponse({"detail": "internal server error"}, status_code=500)

    return app
