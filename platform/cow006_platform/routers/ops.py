"""Operations endpoints, outside ``/api`` and outside the OpenAPI schema (they are for
orchestrators and Prometheus, not for API clients):

* ``GET /healthz``: liveness.  No I/O at all: a process that answers is alive; a database
  outage must not make an orchestrator restart every API process.
* ``GET /readyz``: readiness.  The database (``SELECT 1``) and the broker (a connection) are
  checked, each within a few seconds; 200 ``{"status": "ready", "checks": {...}}``, or 503
  with ``"status": "unavailable"``, each check's result and one sentence saying what failed.
* ``GET /metrics``: Prometheus text format, from the database (``cow006_platform.metrics``)
  plus this process's HTTP request metrics.

``install`` adds the router, the metrics registry and the request-metrics middleware to an
app (``app.create_app`` calls it).
"""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from .. import readiness
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


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    """Prometheus text format (the database snapshot is cached; see cow006_platform.metrics)."""
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
    app.include_router(router)
