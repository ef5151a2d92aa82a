"""Operations endpoints, outside ``/api`` and outside the OpenAPI schema (they are for
orchestrators and Prometheus, not for API clients):

* ``GET /healthz``: liveness.  No I/O at all: a process that answers is alive; a database
  outage must not make an orchestrator restart every API process.
* ``GET /readyz``: readiness.  The database (``SELECT 1``) and the broker (a connection) are
  checked, each within a few seconds; 200 ``{"status": "ready", "checks": {...}}``, or 503
  with ``"status": "unavailable"``, each check's result and one sentence saying what failed.
* ``GET /metrics``: Prometheus text format, from the database (``cow006_platform.metrics``)
  plus this process's HTTP request metrics.  Who may read it is ``settings.metrics``:
  ``token`` (the default: ``Authorization: Bearer`` with ``metrics_token`` or an admin's API
  token), ``open``, or ``bind`` (served only on the address ``metrics_bind``, which
  ``cow006 api`` listens on besides the API's: nothing else is served there, and /metrics is
  a 404 on the API's address).

``install`` adds the router, the metrics registry and the request-metrics middleware to an
app (``app.create_app`` calls it).
"""

from __future__ import annotations

import hmac
from typing import Any

import anyio
from fastapi import APIRouter, FastAPI, HTTPException, Request, status
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from .. import deps, readiness
from ..metrics import HttpMetrics, PageCacheCollector, registry_for
from ..settings import Settings

router = APIRouter(include_in_schema=False)


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """Alive: the process answers (no I/O)."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    """Ready: the database and the broker answer (see the module)."""
    state = request.app.state
    settings: Settings = state.settings
    results: dict[str, str | None] = {}

    async def run(name: str, check: Any, *args: Any) -> None:
        # Each check is bounded (readiness.bounded) and blocks: run both at once, off the loop.
        results[name] = await anyio.to_thread.run_sync(check, *args)

    async with anyio.create_task_group() as group:
        group.start_soon(run, "database", readiness.check_engine, state.engine)
        group.start_soon(run, "broker", readiness.check_broker, settings.celery_broker_url)
    checks = {name: "ok" if results[name] is None else "failed" for name in sorted(results)}
    problems = [results[name] for name in sorted(results) if results[name] is not None]
    if not problems:
        return JSONResponse({"status": "ready", "checks": checks})
    body = {"status": "unavailable", "checks": checks, "detail": "; ".join(map(str, problems))}
    return JSONResponse(body, status_code=503)


def _metrics_text(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)


def metrics_port(settings: Settings) -> int | None:
    """The port /metrics is served on when ``settings.metrics`` is ``bind``."""
    if settings.metrics != "bind":
        return None
    return int(settings.metrics_bind.rpartition(":")[2])


def _on_metrics_port(scope: Any, port: int) -> bool:
    server = scope.get("server")
    return bool(server) and server[1] == port


async def _allowed(request: Request, settings: Settings) -> None:
    """Refuse a /metrics read the settings do not allow (see the module)."""
    if settings.metrics == "open":
        return
    if settings.metrics == "bind":
        port = metrics_port(settings)
        if port is None or not _on_metrics_port(request.scope, port):
            raise HTTPException(status.HTTP_404_NOT_FOUND, "Not Found")
        return
    values = request.headers.getlist("authorization")
    token = deps.bearer_token(values) if values else None
    secret = settings.metrics_token
    if token is not None and secret and hmac.compare_digest(token.encode(), secret.encode()):
        return
    user = await deps.optional_user(request)  # 401 for a bad token, 429 past the limit
    if user is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "/metrics needs the metrics token or an admin's API token (Authorization: Bearer)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if not user.is_admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "admins only")


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    """Prometheus text format (the database snapshot is cached; see cow006_platform.metrics)."""
    await _allowed(request, request.app.state.settings)
    registry: CollectorRegistry = request.app.state.metrics_registry
    # The snapshot queries the database: off the event loop.
    body = await anyio.to_thread.run_sync(_metrics_text, registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


def install(app: FastAPI) -> None:
    """Add the operations routes, the metrics registry and the request metrics to ``app``
    (after ``app.state.settings`` and ``app.state.read_session_factory`` are set)."""
    settings: Settings = app.state.settings
    registry, collector = registry_for(
        app.state.read_session_factory, settings.metrics_cache_seconds
    )
    app.state.metrics_registry = registry
    app.state.metrics_collector = collector
    if app.state.page_cache is not None:
        registry.register(PageCacheCollector(app.state.page_cache))
    app.add_middleware(HttpMetrics, registry=registry)
    port = metrics_port(settings)
    if port is not None:
        app.add_middleware(MetricsOnly, port=port)
    app.include_router(router)


class MetricsOnly:
    """ASGI middleware: on the metrics address, nothing but ``GET /metrics`` (a 404)."""

    def __init__(self, app: Any, port: int) -> None:
        self.app = app
        self.port = port

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and _on_metrics_port(scope, self.port)
            and scope["path"] != "/metrics"
        ):
            response = JSONResponse({"detail": "Not Found"}, status_code=404)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
