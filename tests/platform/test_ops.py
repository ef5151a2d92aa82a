"""Operations endpoints and logs: ``/healthz``, ``/readyz`` (a real database and broker, and a
dead broker), ``/metrics`` after real matches (numbers read back from the database), the
metrics cache, and the JSON log format."""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from helpers import data as dt
from helpers.api import new_match
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db, logs, readiness, results, storage
from cow006_platform.app import create_app
from cow006_platform.metrics import DURATION_BUCKETS, ArenaCollector
from cow006_platform.models import AgentVersion, Ladder, Match, MatchStatus, User, VersionStatus
from cow006_platform.settings import Settings
from cow006_workers import runs

CLEAN = "def play(view):\n    return min(view.hand)\n"
ILLEGAL = "def play(view):\n    return 105  # never in a hand: an illegal_card fault\n"

# How long a poll for something the cache does in the background may go on before the test
# fails: a bound, not a timing (the suite runs in parallel, on loaded machines too).
POLL_BOUND = 30.0


@pytest.fixture
def ops_settings(settings: Settings, tmp_path: Path) -> Settings:
    # The embedded broker in the test's folder (the default would be ./var of the cwd), bots
    # unsandboxed (these tests are about the numbers, not the sandbox: tests/hostile is).
    # /metrics open: who may read it is tested in test_limits_served.py.
    return settings.model_copy(
        update={
            "broker_url": f"sqla+sqlite:///{tmp_path / 'broker.sqlite'}",
            "sandbox": "off",
            "metrics": "open",
        }
    )


@pytest.fixture
def client(ops_settings: Settings) -> Iterator[TestClient]:
    from helpers.api import RecordingExecutor

    with TestClient(create_app(ops_settings, executor=RecordingExecutor())) as c:
        yield c


def scrape(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """/metrics as {(sample name, sorted labels): value}."""
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


@pytest.mark.slow
def test_healthz_is_ok_without_io(client: TestClient) -> None:
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}


@pytest.mark.slow
def test_readyz_checks_the_database_and_the_broker(client: TestClient) -> None:
    r = client.get("/readyz")
    assert r.status_code == 200, r.text
    assert r.json() == {"status": "ready", "checks": {"database": "ok", "broker": "ok"}}


@pytest.mark.slow
def test_readyz_is_503_with_a_dead_broker_quickly(ops_settings: Settings) -> None:
    from helpers.api import RecordingExecutor

    dead = ops_settings.model_copy(update={"broker_url": "redis://127.0.0.1:1/0"})  # closed port
    with TestClient(create_app(dead, executor=RecordingExecutor())) as c:
        started = time.monotonic()
        r = c.get("/readyz")
        assert time.monotonic() - started < readiness.CHECK_TIMEOUT + 2
    assert r.status_code == 503
    body = r.json()
    assert body["status"] == "unavailable"
    assert body["checks"] == {"database": "ok", "broker": "failed"}
    assert body["detail"].startswith("the broker is unreachable")
    assert "Connection refused" in body["detail"]


def test_a_dead_database_is_one_sentence() -> None:
    problem = readiness.check_database("postgresql://nobody@127.0.0.1:1/none", timeout=10)
    assert problem is not None and problem.startswith("the database is unreachable (")


def test_a_hanging_check_is_cut_short() -> None:
    started = time.monotonic()
    problem = readiness.bounded(lambda: time.sleep(5), 0.2, "broker")
    assert problem == "the broker did not answer within 0.2 s"
    assert time.monotonic() - started < 2


@pytest.mark.slow
def test_ops_routes_are_not_in_the_api_schema(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert not {"/healthz", "/readyz", "/metrics"} & set(paths)
    assert paths  # the API itself is there


# -- /metrics after real matches ---------------------------------------------------------------


def _version(session: Session, cfg: Settings, owner: User, name: str, source: str) -> int:
    """An active version of a new agent ``name``, its bot stored like an upload; its id."""
    stored = storage.store_upload(cfg, "bot.py", source.encode())
    ag = dt.agent(session, owner, name)
    return dt.version(session, ag, sha256=stored.sha256, status=VersionStatus.active).id


def _world(factory: sessionmaker[Session], cfg: Settings) -> dict[str, Any]:
    """Matches in every state: 2 clean ones and 1 with an illegal bot played for real (bot
    processes, unsandboxed), 1 failed, 1 ladder match and 1 challenge queued; a pending
    version; a paused ladder."""
    with db.session_scope(factory) as s:
        owner = User(name="ops", token_hash="f" * 64)
        s.add(owner)
        s.flush()
        a, b, c = (_version(s, cfg, owner, f"clean{i}", f"{CLEAN}# {i}\n") for i in range(3))
        bad = _version(s, cfg, owner, "illegal", ILLEGAL)
        pending = _version(s, cfg, owner, "newcomer", f"{CLEAN}# new\n")
        s.get(AgentVersion, pending).status = "pending"  # type: ignore[union-attr]
        main = Ladder(name="main", players=3, decision_time=0.5, time_bank=2.0)
        s.add_all([main, Ladder(name="quiet", state="paused")])
        s.flush()
        lid = main.id
    played = [
        new_match(factory, kind="ladder", version_ids=vs, ladder_id=lid)
        for vs in ([a, b, c], [c, b, a], [a, bad, b])
    ]
    for mid in played:
        runs.run_match(factory, cfg, mid, None)
    failed = new_match(factory, kind="ladder", version_ids=[a, b, c], ladder_id=lid)
    with db.session_scope(factory) as s:
        results.fail_match(s, failed, "The match could not be run (test).")
    new_match(factory, kind="ladder", version_ids=[b, c, a], ladder_id=lid)
    new_match(factory, kind="challenge", version_ids=[a, b], rated=False)
    return {"played": played, "faulty": played[2], "ladder": lid}


@pytest.mark.slow
def test_metrics_count_what_the_database_holds(
    client: TestClient, ops_settings: Settings, tmp_path: Path
) -> None:
    factory = client.app.state.session_factory  # type: ignore[attr-defined]
    world = _world(factory, ops_settings)
    with factory() as s:
        rows = s.execute(select(Match.id, Match.status, Match.started_at, Match.finished_at)).all()
        durations = [
            (db.aware(fin) - db.aware(start)).total_seconds()  # type: ignore[operator]
            for _id, status, start, fin in rows
            if status is MatchStatus.finished
        ]
        faulty_log = results.read_log(s, world["faulty"])
    assert len(durations) == 3, rows  # the three played matches finished
    assert faulty_log is not None
    fault_kinds = [f["kind"] for f in faulty_log["faults"]]
    assert fault_kinds and set(fault_kinds) == {"illegal_card"}

    m = scrape(client)

    def matches(kind: str, status: str) -> float:
        return m[("cow006_matches", (("kind", kind), ("status", status)))]

    assert matches("ladder", "finished") == 3
    assert matches("ladder", "failed") == 1
    assert matches("ladder", "queued") == 1
    assert matches("ladder", "running") == 0
    assert matches("challenge", "queued") == 1
    assert matches("league", "finished") == 0
    assert m[("cow006_matches_with_faults", (("kind", "ladder"),))] == 1
    assert m[("cow006_matches_with_faults", (("kind", "challenge"),))] == 0
    assert m[("cow006_bot_faults_total", (("kind", "illegal_card"),))] == len(fault_kinds)
    assert m[("cow006_queue_depth", ())] == 2
    assert m[("cow006_ladder_queue_depth", (("ladder", "main"),))] == 1
    assert m[("cow006_ladder_queue_depth", (("ladder", "quiet"),))] == 0
    assert m[("cow006_versions", (("status", "active"),))] == 4
    assert m[("cow006_versions", (("status", "pending"),))] == 1
    assert m[("cow006_versions", (("status", "rejected"),))] == 0
    assert m[("cow006_ladders", (("state", "open"),))] == 1
    assert m[("cow006_ladders", (("state", "paused"),))] == 1
    assert m[("cow006_metrics_database_up", ())] == 1

    # The histogram: counted in SQL, equal to what the rows say.
    assert m[("cow006_match_duration_seconds_count", ())] == 3
    # SQLite reads timestamps to the millisecond (julianday): up to 1 ms off per match.
    assert m[("cow006_match_duration_seconds_sum", ())] == pytest.approx(sum(durations), abs=5e-3)
    for bound in DURATION_BUCKETS:
        key = ("cow006_match_duration_seconds_bucket", (("le", repr(bound)),))
        assert m[key] == sum(1 for d in durations if d <= bound), bound
    assert m[("cow006_match_duration_seconds_bucket", (("le", "+Inf"),))] == 3

    # This process's own requests, per route template.
    client.get("/healthz")
    client.get("/api/no-such-thing")
    m = scrape(client)
    ok = (
        "cow006_http_requests_total",
        (("method", "GET"), ("route", "/healthz"), ("status", "200")),
    )
    assert m[ok] >= 1
    lost = (
        "cow006_http_requests_total",
        (("method", "GET"), ("route", "<unmatched>"), ("status", "404")),
    )
    assert m[lost] == 1


def test_requests_are_labelled_by_their_whole_route_template(client: TestClient) -> None:
    # A route's own path lacks the prefixes of the routers it is included through: without
    # them the API's agent page and the web's would share "/{agent_id}"-like labels, and
    # /api/agents (the route "") would count as unmatched.
    client.get("/api/agents")
    client.get("/api/agents/424242")  # a 404 from a route that matched
    client.get("/agents/424242")  # the web page of the same path
    client.get("/api/ladders/1/leaderboard")
    m = scrape(client)
    seen = {
        (dict(labels)["route"], dict(labels)["status"])
        for (name, labels), _ in m.items()
        if name == "cow006_http_requests_total"
    }
    assert ("/api/agents", "200") in seen
    assert ("/api/agents/{agent_id}", "404") in seen
    assert ("/agents/{agent_id}", "404") in seen
    assert any(route == "/api/ladders/{ladder_id}/leaderboard" for route, _ in seen)
    assert not any(route.startswith("/{") or route == "" for route, _ in seen), seen


@pytest.mark.slow
def test_the_page_cache_is_measured_and_its_hits_counted_under_their_route(
    client: TestClient,
) -> None:
    cache = client.app.state.page_cache  # type: ignore[attr-defined]
    deadline = time.monotonic() + POLL_BOUND
    verdicts = []
    while "hit" not in verdicts or "miss" not in verdicts:
        assert time.monotonic() < deadline, f"never both a hit and a miss: {verdicts}"
        verdicts.append(client.get("/api/matches?limit=7").headers["x-cache"])
        time.sleep(0.02)
    m = scrape(client)
    # Misses and hits alike under the route the router matched, none as "<unmatched>".
    labels = {
        dict(labels)["route"]: value
        for (name, labels), value in m.items()
        if name == "cow006_http_requests_total" and dict(labels)["status"] == "200"
    }
    assert "<unmatched>" not in labels
    assert labels["/api/matches"] == len(verdicts)
    assert m[("cow006_page_cache_hits_total", ())] == cache.hits >= 1
    assert m[("cow006_page_cache_misses_total", ())] == cache.misses >= 1
    assert m[("cow006_page_cache_stale_hits_total", ())] == cache.stale_hits
    assert m[("cow006_page_cache_entries", ())] == len(cache.entries) >= 1
    assert m[("cow006_page_cache_bytes", ())] == cache.size > 0
    assert m[("cow006_page_cache_pending", ())] == len(cache.pending)
    assert ("cow006_page_cache_rendered_ahead_total", ()) in m
    # Every render counted under the route that answered: the misses of /api/matches here.
    renders = m[("cow006_page_cache_renders_total", (("route", "/api/matches"),))]
    assert renders == cache.renders["/api/matches"] >= cache.misses >= 1


def test_the_snapshot_is_cached_for_a_few_seconds(session_factory: sessionmaker[Session]) -> None:
    now = [1000.0]
    collector = ArenaCollector(session_factory, cache_seconds=5.0, clock=lambda: now[0])

    def queued() -> float:
        for family in collector.collect():
            if family.name == "cow006_queue_depth":
                return float(family.samples[0].value)
        raise AssertionError("no cow006_queue_depth")

    assert queued() == 0
    vids = dt.versions(session_factory, 2)
    new_match(session_factory, kind="challenge", version_ids=vids, rated=False)
    now[0] += 4.9
    assert queued() == 0  # still the snapshot of 4.9 s ago
    now[0] += 0.2
    assert queued() == 1


def test_metrics_survive_a_dead_database(tmp_path: Path) -> None:
    engine = db.make_engine("postgresql://nobody@127.0.0.1:1/none")
    collector = ArenaCollector(db.make_sessionmaker(engine), cache_seconds=0)
    try:
        families = {f.name: f for f in collector.collect()}
    finally:
        engine.dispose()
    assert set(families) == {"cow006_metrics_database_up"}
    assert families["cow006_metrics_database_up"].samples[0].value == 0


# -- logs -------------------------------------------------------------------------------------


def test_the_json_formatter_writes_one_object_per_line() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    logger = logging.getLogger("cow006.test.json")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        logger.info("match %d done", 42, extra={"match_id": 42, "version_id": 7, "at": Path("/x")})
        try:
            raise ValueError("line one\nline two")
        except ValueError:
            logger.exception("it broke")
    finally:
        logger.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["message"] == "match 42 done" and first["level"] == "INFO"
    assert first["logger"] == "cow006.test.json"
    assert first["match_id"] == 42 and first["version_id"] == 7 and first["at"] == "/x"
    assert first["time"].endswith("+00:00") and "exc_info" not in first
    assert "args" not in first and "msg" not in first  # the record's own fields stay out
    assert second["level"] == "ERROR" and "Traceback" in second["exc_info"]
    assert "ValueError: line one" in second["exc_info"]


def test_configure_installs_one_handler_in_the_chosen_format() -> None:
    root = logging.getLogger()
    level = root.level
    stream = io.StringIO()
    try:
        logs.configure(Settings(log_format="json", log_level="warning"), stream)
        handler = logs.configure(Settings(log_format="json", log_level="info"), stream)
        ours = [h for h in root.handlers if getattr(h, "_cow006_handler", False)]
        assert ours == [handler]  # replaced, not stacked
        assert root.level == logging.INFO
        logging.getLogger("cow006.test.configure").info("hello", extra={"match_id": 1})
        logging.getLogger("uvicorn.error").info("uvicorn too")
        entries = [json.loads(line) for line in stream.getvalue().splitlines()]
        assert [(e["message"], e.get("match_id")) for e in entries] == [
            ("hello", 1),
            ("uvicorn too", None),
        ]
        stream.truncate(0)
        stream.seek(0)
        logs.configure(Settings(log_format="text"), stream)
        logging.getLogger("cow006.test.configure").warning("plain")
        assert stream.getvalue().rstrip().endswith("WARNING cow006.test.configure: plain")
    finally:
        for h in [h for h in root.handlers if getattr(h, "_cow006_handler", False)]:
            root.removeHandler(h)
        for name in logs.UVICORN_LOGGERS:
            logging.getLogger(name).handlers = []
            logging.getLogger(name).propagate = True
        root.setLevel(level)


def test_bad_log_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown log level"):
        logs.level_of("loud")
    assert logs.level_of("debug") == logging.DEBUG
    with pytest.raises(ValueError):
        Settings(log_format="xml")  # type: ignore[arg-type]
