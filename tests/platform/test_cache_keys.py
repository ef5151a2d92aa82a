"""Attacks on the page cache's keys (issue 14): junk parameters must not grow it past its
budget, repeated parameters must not change what another reader gets, and every entry ages
out, read or not."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.api import Api, RecordingExecutor

from cow006_platform.cache import PageCache, page_key
from cow006_platform.settings import Settings

BUDGET = 1024 * 1024

# How long a poll for something the cache does in the background may go on before the test
# fails: a bound, not a timing (the suite runs in parallel, on loaded machines too).
POLL_BOUND = 30.0


def _api(db_url: str, tmp_path: Path, **settings: object) -> Iterator[Api]:
    from fastapi.testclient import TestClient

    from cow006_platform.app import create_app

    config = Settings(
        database_url=db_url,
        data_dir=tmp_path / "data",
        cache_poll_seconds=0.05,
        cache_bytes=BUDGET,
        cache_warm_pages=0,
        **settings,  # type: ignore[arg-type]
    )
    executor = RecordingExecutor()
    app = create_app(config, executor=executor)
    executor.session_factory = app.state.session_factory
    with TestClient(app) as client:
        yield Api(client, executor, app.state.session_factory)


@pytest.fixture
def api(db_url: str, tmp_path: Path) -> Iterator[Api]:
    yield from _api(db_url, tmp_path)


def _cache(api: Api) -> PageCache:
    cache = api.client.app.state.page_cache
    assert isinstance(cache, PageCache)
    return cache


def _ladder_with_entry(api: Api) -> tuple[int, int]:
    admin = api.user(admin=True)
    ladder = api.ladder(admin)
    return ladder, api.entrant(ladder)[0]


@pytest.mark.slow
def test_the_junk_parameter_attack_stays_within_the_budget(api: Api) -> None:
    ladder, agent = _ladder_with_entry(api)
    cache = _cache(api)
    junk = "x" * 60_000
    zeros = "0" * 60_000
    urls = [
        f"/api/agents/{agent}/ratings?junk{{}}={junk}",  # a name the route does not read
        f"/api/agents/{agent}/ratings?offset={zeros}{{}}",  # a name it reads, a huge value
        f"/api/ladders/{ladder}/leaderboard?limit={zeros}{{}}",
        f"/api/matches?agent_id={zeros}{{}}",
    ]
    statuses = set()
    for i in range(500):
        r = api.client.get(urls[i % len(urls)].format(i))
        statuses.add(r.status_code)
        assert r.headers.get("x-cache") != "hit"
    keys = sum(len(k) for k in cache.entries)
    assert keys + sum(len(e.body) for e in cache.entries.values()) <= cache.size <= BUDGET
    assert not any(len(k) > 1000 for k in cache.entries), "a junk request was cached"
    # Unknown names are refused with one sentence; huge numbers are read as the route reads
    # them (0, 50 after the zeros) but not cached.
    r = api.client.get(f"/api/agents/{agent}/ratings?junk=1")
    assert r.status_code == 422
    assert r.json()["detail"][0]["msg"] == (
        "unknown query parameter 'junk' (this route reads: ladder_id, limit, offset)"
    )
    assert statuses <= {200, 422}


@pytest.mark.slow
def test_key_bytes_count_against_the_budget(db_url: str, tmp_path: Path) -> None:
    for api in _api(db_url, tmp_path):
        _, agent = _ladder_with_entry(api)
        cache = _cache(api)
        before = cache.size
        r = api.client.get(f"/api/agents/{agent}")
        assert r.status_code == 200 and r.headers["x-cache"] == "miss"
        key = f"/api/agents/{agent}"
        assert key in cache.entries
        assert cache.size - before >= len(key) + len(r.content)


@pytest.mark.parametrize(
    ("attack", "victim", "field", "value"),
    [
        ("ratings?offset=2&offset=0", "ratings?offset=2", "offset", 2),
        ("ratings?offset=0&offset=2", "ratings", "offset", 0),
        ("leaderboard?limit=200&limit=50", "leaderboard?limit=200", "limit", 200),
        ("leaderboard?limit=50&limit=200", "leaderboard", "limit", 50),
    ],
)
@pytest.mark.slow
def test_repeated_parameters_do_not_change_what_another_reader_gets(
    api: Api, attack: str, victim: str, field: str, value: int
) -> None:
    ladder, agent = _ladder_with_entry(api)
    base = f"/api/ladders/{ladder}/" if "leaderboard" in attack else f"/api/agents/{agent}/"
    r = api.client.get(base + attack)
    assert r.status_code == 422, r.text
    assert "given more than once" in r.json()["detail"][0]["msg"]
    for _ in range(3):  # the victim's first read and the cached ones after it
        page = api.client.get(base + victim)
        assert page.status_code == 200
        assert page.json()[field] == value, f"{victim} answered {page.json()[field]}"


def test_repeated_parameters_have_no_cache_key() -> None:
    assert page_key("/api/agents/1/ratings", "offset=2&offset=0") is None
    assert page_key("/api/matches", "agent_id=3&agent_id=4") is None
    assert page_key("/api/matches", "agent_id=" + "0" * 40 + "3") is None
    assert page_key("/api/agents/1/ratings", "offset=2") == "/api/agents/1/ratings?offset=2"


@pytest.mark.slow
def test_every_entry_has_a_maximum_age_read_or_not(db_url: str, tmp_path: Path) -> None:
    for api in _api(db_url, tmp_path, cache_max_age=0.5):
        _, agent = _ladder_with_entry(api)
        cache = _cache(api)
        key = f"/api/agents/{agent}"
        deadline = time.monotonic() + POLL_BOUND
        while key not in cache.entries:  # the setup's own feed echoes may drop it at first
            assert time.monotonic() < deadline, "the page was never cached"
            api.client.get(key)
            time.sleep(0.05)
        # Never read again: it still goes once past its age (the polls sweep it out).
        deadline = time.monotonic() + POLL_BOUND
        while key in cache.entries:
            assert time.monotonic() < deadline, "an unread entry outlived its maximum age"
            time.sleep(0.1)
