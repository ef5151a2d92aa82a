"""Prometheus metrics of the arena, read from the database (``GET /metrics``).

The arena runs on many machines, and every API process may be the one scraped, so counters
kept in a process's memory would each see a slice of the work.  The database is the source
of truth: ``ArenaCollector`` answers every scrape from a few aggregate queries (counts grouped
in SQL, the duration histogram's buckets summed in SQL: no match row is loaded), and keeps
the answer for ``metrics_cache_seconds`` so that frequent scrapes of a large database (100,000
matches and more) stay cheap.

Metrics (all prefixed ``cow006_``):

===============================================  ==================================================
``cow006_matches{kind,status}``                   matches by kind (ladder, league, challenge) and
                                                  status (queued, running, finished, failed)
``cow006_matches_with_faults{kind}``              matches in which at least one seat faulted
``cow006_queue_depth``                            queued matches (every kind)
``cow006_ladder_queue_depth{ladder}``             queued matches per ladder
``cow006_match_duration_seconds``                 histogram of finished matches' run times
                                                  (``finished_at - started_at`` of the last run)
``cow006_bot_faults_total{kind}``                 faults recorded in match logs, by fault kind
``cow006_versions{status}``                       agent versions by validation status
``cow006_ladders{state}``                         ladders by state (open, paused, closed)
``cow006_metrics_database_up``                    1 if the last snapshot could read the database
===============================================  ==================================================

``HttpMetrics`` is an ASGI middleware counting this process's own requests (per route
template, never per raw path: the label set stays bounded) and their latency.
``PageCacheCollector`` reports this process's page cache (``cow006_page_cache_*``: entries,
bytes, hits, stale hits, misses, pages rendered ahead, pages waiting to be rendered ahead,
and every render by the route template that answered: a bounded label set too).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from sqlalchemy import ColumnElement, case, exists, extract, func, select, text
from sqlalchemy.orm import Session, sessionmaker

from .models import (
    AgentVersion,
    Ladder,
    LadderState,
    Match,
    MatchKind,
    MatchSeat,
    MatchStatus,
    VersionStatus,
)

logger = logging.getLogger(__name__)

# Upper bounds (seconds) of the match duration buckets: a trivial sandboxed match takes about
# 0.3 s, a match of bots that think for their whole time budget minutes.
DURATION_BUCKETS: tuple[float, ...] = (0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)

# Faults by kind: the match's log keeps them as a JSON list of {"kind": ..., ...} on
# ``matches.faults``; each database unnests it in SQL its own way.  (GROUP BY 1: a bare
# ``kind`` would be the column matches.kind on PostgreSQL, not the alias.)
_FAULTS_SQL = {
    "sqlite": (
        "SELECT json_extract(f.value, '$.kind') AS kind, count(*) AS n "
        "FROM matches, json_each(matches.faults) AS f "
        "WHERE matches.faults IS NOT NULL AND json_type(matches.faults) = 'array' "
        "GROUP BY 1"
    ),
    "postgresql": (
        "SELECT f.value ->> 'kind' AS kind, count(*) AS n "
        "FROM matches, json_array_elements(matches.faults) AS f "
        "WHERE matches.faults IS NOT NULL AND json_typeof(matches.faults) = 'array' "
        "GROUP BY 1"
    ),
}


def _duration(dialect: str) -> ColumnElement[Any]:
    """A finished match's run time in seconds, as SQL for ``dialect``."""
    if dialect == "sqlite":  # timestamps are text there; julianday() reads them
        return (func.julianday(Match.finished_at) - func.julianday(Match.started_at)) * 86400.0
    return extract("epoch", Match.finished_at - Match.started_at)


def snapshot(session: Session) -> list[Metric]:
    """Every database metric, read in one session (see the module)."""
    dialect = session.get_bind().dialect.name
    out: list[Metric] = []

    # Matches by kind and status; every combination is exported, zeros included, so that a
    # rate() or an alert over a series that is still 0 works from the start.
    counts = {
        (MatchKind(kind), MatchStatus(status)): int(n)
        for kind, status, n in session.execute(
            select(Match.kind, Match.status, func.count()).group_by(Match.kind, Match.status)
        )
    }
    matches = GaugeMetricFamily(
        "cow006_matches", "Matches by kind and status.", labels=["kind", "status"]
    )
    for kind in MatchKind:
        for status in MatchStatus:
            matches.add_metric([kind.value, status.value], counts.get((kind, status), 0))
    out.append(matches)

    faulted = dict(
        session.execute(
            select(Match.kind, func.count())
            .where(exists().where(MatchSeat.match_id == Match.id, MatchSeat.faults > 0))
            .group_by(Match.kind)
        ).all()
    )
    with_faults = GaugeMetricFamily(
        "cow006_matches_with_faults",
        "Matches in which at least one seat faulted, by kind.",
        labels=["kind"],
    )
    for kind in MatchKind:
        with_faults.add_metric([kind.value], int(faulted.get(kind, 0)))
    out.append(with_faults)

    queued = sum(n for (_, status), n in counts.items() if status is MatchStatus.queued)
    out.append(
        GaugeMetricFamily(
            "cow006_queue_depth", "Matches queued and waiting for a worker.", value=queued
        )
    )
    per_ladder = GaugeMetricFamily(
        "cow006_ladder_queue_depth", "Queued matches per ladder.", labels=["ladder"]
    )
    rows = session.execute(
        select(Ladder.name, func.count(Match.id))
        .select_from(Ladder)
        .outerjoin(Match, (Match.ladder_id == Ladder.id) & (Match.status == MatchStatus.queued))
        .group_by(Ladder.id, Ladder.name)
        .order_by(Ladder.id)
    )
    for name, n in rows:
        per_ladder.add_metric([name], int(n))
    out.append(per_ladder)

    out.append(_duration_histogram(session, dialect))

    faults = CounterMetricFamily(
        "cow006_bot_faults", "Bot faults recorded in match logs, by fault kind.", labels=["kind"]
    )
    sql = _FAULTS_SQL.get(dialect)
    if sql is not None:
        for kind, n in session.execute(text(sql)):
            faults.add_metric([str(kind)], int(n))
    out.append(faults)

    versions = dict(
        session.execute(
            select(AgentVersion.status, func.count()).group_by(AgentVersion.status)
        ).all()
    )
    by_status = GaugeMetricFamily(
        "cow006_versions", "Agent versions by validation status.", labels=["status"]
    )
    for version_status in VersionStatus:
        by_status.add_metric([version_status.value], int(versions.get(version_status, 0)))
    out.append(by_status)

    states = dict(session.execute(select(Ladder.state, func.count()).group_by(Ladder.state)).all())
    ladders = GaugeMetricFamily("cow006_ladders", "Ladders by state.", labels=["state"])
    for state in LadderState:
        ladders.add_metric([state.value], int(states.get(state, 0)))
    out.append(ladders)
    return out


def _duration_histogram(session: Session, dialect: str) -> HistogramMetricFamily:
    """The run-time histogram of finished matches, its buckets counted in SQL."""
    duration = _duration(dialect)
    # Each match is counted in its own (first fitting) bucket, grouped in SQL: a dozen rows
    # come back, whatever the number of matches, and the CASE stops at the first bucket that
    # fits (one ``sum(case(...))`` per bucket computed the duration a dozen times a row).
    bucket = case(
        *((duration <= bound, i) for i, bound in enumerate(DURATION_BUCKETS)),
        else_=len(DURATION_BUCKETS),
    )
    rows = session.execute(
        select(bucket, func.count(), func.coalesce(func.sum(duration), 0.0))
        .where(
            Match.status == MatchStatus.finished,
            Match.started_at.is_not(None),
            Match.finished_at.is_not(None),
        )
        .group_by(bucket)
    ).all()
    per_bucket = [0] * (len(DURATION_BUCKETS) + 1)
    total = 0.0
    for index, n, seconds in rows:
        per_bucket[int(index)] += int(n)
        total += float(seconds)
    buckets: list[tuple[str, float]] = []
    running = 0
    for bound, n in zip((*map(_bound, DURATION_BUCKETS), "+Inf"), per_bucket, strict=True):
        running += n  # Prometheus buckets are cumulative
        buckets.append((bound, running))
    return HistogramMetricFamily(
        "cow006_match_duration_seconds",
        "Run time of finished matches (from the start of their last run to their result).",
        buckets=buckets,
        sum_value=total,
    )


def _bound(value: float) -> str:
    return repr(float(value))


class ArenaCollector(Collector):
    """The database metrics, snapshotted at most once per ``cache_seconds`` (see the module).

    A scrape while the database is down answers ``cow006_metrics_database_up 0`` (and the
    error is logged) instead of failing: the scrape itself still works, and alerting on the
    0 is simple.
    """

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        cache_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._factory = session_factory
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._lock = threading.Lock()  # concurrent scrapes wait for one snapshot
        self._cached: tuple[float, list[Metric]] | None = None

    def describe(self) -> Iterable[Metric]:
        # Nothing to describe up front: registering must not query the database.
        return []

    def _fresh(self) -> list[Metric]:
        try:
            with self._factory() as session:
                metrics = snapshot(session)
            up = 1
        except Exception:
            logger.exception("the metrics could not be read from the database")
            metrics, up = [], 0
        metrics.append(
            GaugeMetricFamily(
                "cow006_metrics_database_up",
                "1 if the last metrics snapshot could read the database, else 0.",
                value=up,
            )
        )
        return metrics

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            now = self._clock()
            if self._cached is None or now - self._cached[0] >= self._cache_seconds:
                self._cached = (now, self._fresh())
            return list(self._cached[1])


# Where a route label is kept in the scope once known (the page cache sets it on its hits,
# which no router sees).
ROUTE_LABEL = "cow006.route_label"
UNMATCHED = "<unmatched>"
_PARAM = re.compile(r"{([^}:]+)(?::[^}]*)?}")


def route_label(scope: MutableMapping[str, Any]) -> str:
    """The template of the route that answered, with its routers' prefixes:
    ``/api/agents/{agent_id}``, ``/agents/{agent_id}`` (the web page), ``<unmatched>``.

    ``scope["route"].path`` alone lacks the prefixes of the routers it was included through
    (FastAPI includes routers lazily), so ``/api/agents/{agent_id}`` and the web page
    ``/agents/{agent_id}`` would share a label and ``/api/agents`` would have the empty one.
    The prefix is what the request path has before the route's own path, filled in with the
    request's path parameters.  Our routers' prefixes are constant, so the label set stays
    bounded; a path the fill does not reproduce (a converter that formats differently) keeps
    the bare template rather than a raw path.
    """
    label = scope.get(ROUTE_LABEL)
    if label is not None:
        return str(label)
    template = getattr(scope.get("route"), "path", None)
    if template is None:
        return UNMATCHED
    params = scope.get("path_params") or {}
    filled = _PARAM.sub(lambda m: str(params.get(m.group(1), m.group(0))), template)
    path = str(scope.get("path", ""))
    if path.endswith(filled):
        template = path[: len(path) - len(filled)] + template
    return template or "/"


class HttpMetrics:
    """ASGI middleware: this process's requests and their latency, per route template."""

    def __init__(self, app: Any, registry: CollectorRegistry) -> None:
        self.app = app
        self.requests = Counter(
            "cow006_http_requests",
            "HTTP requests answered by this API process.",
            ["method", "route", "status"],
            registry=registry,
        )
        self.latency = Histogram(
            "cow006_http_request_duration_seconds",
            "Time this API process took to answer HTTP requests.",
            ["method", "route"],
            registry=registry,
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets if the app raises before answering

        async def send_status(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            # A path no route matched is one label, not one per path a scanner tried.
            route = route_label(scope)
            method = str(scope.get("method", ""))
            self.requests.labels(method, route, str(status)).inc()
            self.latency.labels(method, route).observe(time.perf_counter() - started)


# The page cache's metrics: (name without the prefix, help, counter or gauge, its value).
_PAGE_CACHE_METRICS: list[tuple[str, str, bool, Callable[[Any], float]]] = [
    ("entries", "Pages held by this process's cache.", False, lambda c: len(c.entries)),
    ("bytes", "Bytes of pages held by this process's cache.", False, lambda c: c.size),
    (
        "parts",
        "Parts of pages held by this process's cache (finished matches, boards).",
        False,
        lambda c: len(c.fragments),
    ),
    (
        "pending",
        "Pages waiting to be rendered ahead (warming, refresh, stale pages held back).",
        False,
        lambda c: len(c.pending) + len(c.deferred),
    ),
    ("hits", "Reads answered from the cache.", True, lambda c: c.hits),
    (
        "stale_hits",
        "Of the hits, those answered with a page being rendered again after a change.",
        True,
        lambda c: c.stale_hits,
    ),
    ("misses", "Cacheable reads the app had to render.", True, lambda c: c.misses),
    (
        "rendered_ahead",
        "Pages rendered ahead of their readers (warming, refresh).",
        True,
        lambda c: c.rendered_ahead,
    ),
]


class PageCacheCollector(Collector):
    """This process's page cache (``cache.PageCache``), read live at each scrape."""

    def __init__(self, cache: Any) -> None:
        self.cache = cache

    def collect(self) -> Iterable[Metric]:
        for name, help_text, counter, value in _PAGE_CACHE_METRICS:
            family = CounterMetricFamily if counter else GaugeMetricFamily
            yield family(f"cow006_page_cache_{name}", help_text, value=value(self.cache))
        renders = CounterMetricFamily(
            "cow006_page_cache_renders",
            "Pages rendered (misses and renders ahead) by the route that answered.",
            labels=["route"],
        )
        for route, n in sorted(getattr(self.cache, "renders", {}).items()):
            renders.add_metric([route], n)
        yield renders


def registry_for(
    session_factory: sessionmaker[Session], cache_seconds: float
) -> tuple[CollectorRegistry, ArenaCollector]:
    """A registry of its own per app (tests make many apps in one process) with the
    database collector in it."""
    registry = CollectorRegistry(auto_describe=False)
    collector = ArenaCollector(session_factory, cache_seconds)
    registry.register(collector)
    return registry, collector
