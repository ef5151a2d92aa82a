"""The public page cache and the change feed behind it (cow006_platform.cache, .changes)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.api import Api, RecordingExecutor, new_match, play_and_finish
from sqlalchemy import select

from cow006_platform import changes, db
from cow006_platform.cache import (
    Answer,
    CachedRoutes,
    Entry,
    FeedReader,
    PageCache,
    PublicCacheMiddleware,
    cache_key,
    cached,
)
from cow006_platform.models import Change, LadderEntry, Match, MatchKind, MatchStatus
from cow006_platform.settings import Settings

# How long a poll for something the cache does in the background may go on before the test
# fails: a bound, not a timing (the suite runs in parallel, on loaded machines too).
POLL_BOUND = 30.0


@pytest.fixture
def fast_api(db_url: str, tmp_path: Path) -> Iterator[Api]:
    """The app with a change feed polled every 50 ms."""
    from fastapi.testclient import TestClient

    from cow006_platform.app import create_app

    settings = Settings(database_url=db_url, data_dir=tmp_path / "data", cache_poll_seconds=0.05)
    executor = RecordingExecutor()
    app = create_app(settings, executor=executor)
    executor.session_factory = app.state.session_factory
    with TestClient(app) as client:
        yield Api(client, executor, app.state.session_factory)


def _ladder_with_entries(api: Api, n: int = 4) -> tuple[int, list[int], dict[str, str]]:
    admin = api.user(admin=True)
    ladder = api.ladder(admin)
    versions = [api.entrant(ladder)[1] for _ in range(n)]
    return ladder, versions, admin


def _until_hit(api: Api, url: str) -> None:
    """Read ``url`` until it is served from the cache (the feed's echo of the setup's own
    commits may drop the first answers again within one poll)."""
    deadline = time.monotonic() + POLL_BOUND
    while api.client.get(url).headers.get("x-cache") != "hit":
        assert time.monotonic() < deadline, f"{url} was never served from the cache"
        time.sleep(0.02)


def test_routes_and_their_tags() -> None:
    from cow006_platform.app import api_router

    route_tags = CachedRoutes(api_router().routes).tags
    assert route_tags("/api/ladders/3/leaderboard", "limit=50") == {"ladder:3"}
    assert route_tags("/api/agents/7", "") == {"agent:7"}
    assert route_tags("/api/agents/7/ratings", "offset=50") == {"agent:7"}
    assert route_tags("/api/matches", "agent_id=9&limit=10") == {"agent:9"}
    assert route_tags("/api/matches", "agent_id=9&status=queued") == {"matches"}
    assert route_tags("/api/matches", "") == {"matches"}
    assert route_tags("/api/matches/5/log", "") == {"match:5"}
    assert route_tags("/api/agents/7/versions/1/source", "") is None
    assert route_tags("/api/matches/5/stderr/0", "") is None
    assert route_tags("/api/users/me", "") is None


@pytest.mark.slow
def test_a_second_read_is_a_hit_with_the_same_bytes(fast_api: Api) -> None:
    ladder, _, _ = _ladder_with_entries(fast_api)
    url = f"/api/ladders/{ladder}/leaderboard"
    first = fast_api.client.get(url)
    assert first.headers["x-cache"] == "miss"
    _until_hit(fast_api, url)
    second = fast_api.client.get(url)
    assert first.status_code == second.status_code == 200
    assert second.headers["x-cache"] == "hit"
    assert first.content == second.content
    assert first.headers["etag"] == second.headers["etag"]
    assert second.headers["content-type"] == "application/json"
    again = fast_api.client.get(url, headers={"If-None-Match": second.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


def test_callers_with_a_token_bypass_the_cache(fast_api: Api) -> None:
    owner = fast_api.user()
    agent = fast_api.agent(owner)
    for _ in range(2):
        r = fast_api.client.get(f"/api/agents/{agent}", headers=owner)
        assert r.status_code == 200 and "x-cache" not in r.headers
    assert fast_api.client.get(f"/api/agents/{agent}").headers["x-cache"] == "miss"


@pytest.mark.slow
def test_errors_are_not_cached(fast_api: Api) -> None:
    for _ in range(2):
        r = fast_api.client.get("/api/agents/999")
        assert r.status_code == 404 and r.headers.get("x-cache") != "hit"


@pytest.mark.slow
def test_own_writes_are_seen_at_once(fast_api: Api) -> None:
    ladder, versions, _ = _ladder_with_entries(fast_api)
    url = f"/api/ladders/{ladder}/leaderboard"
    assert fast_api.client.get(url).json()["total"] == 4
    _until_hit(fast_api, url)
    with db.session_scope(fast_api.session_factory) as session:
        entry = session.scalar(select(LadderEntry).where(LadderEntry.version_id == versions[0]))
        assert entry is not None
        agent_id = entry.agent_id
    owner_less = fast_api.client.get(f"/api/agents/{agent_id}")
    assert owner_less.status_code == 200
    # A finished match (as a worker stores it, in this process) moves the leaderboard, the
    # agents' pages and their match lists: none of them may be served from before it.
    match_id = new_match(
        fast_api.session_factory,
        kind=MatchKind.ladder,
        version_ids=versions,
        ladder_id=ladder,
    )
    listed = fast_api.client.get(f"/api/matches?agent_id={agent_id}")
    assert [m["status"] for m in listed.json()["items"]] == ["queued"]
    with db.session_scope(fast_api.session_factory) as session:
        match = session.get(Match, match_id)
        assert match is not None
        match.status = MatchStatus.running  # a claim: no seat changes, the agents' lists do
    listed = fast_api.client.get(f"/api/matches?agent_id={agent_id}")
    assert [m["status"] for m in listed.json()["items"]] == ["running"]
    play_and_finish(fast_api.session_factory, match_id)
    # Read before, so rendered again at once (refresh): a hit or a miss, but of the new data.
    board = fast_api.client.get(url)
    assert sum(row["matches"] for row in board.json()["items"]) == 4
    listed = fast_api.client.get(f"/api/matches?agent_id={agent_id}")
    assert [m["status"] for m in listed.json()["items"]] == ["finished"]
    history = fast_api.client.get(f"/api/agents/{agent_id}/ratings").json()
    assert history["total"] == 1


_OTHER_PROCESS = """
import sys
from sqlalchemy import update
from cow006_platform import db
from cow006_platform.models import Ladder
engine = db.make_engine(sys.argv[1])
factory = db.make_sessionmaker(engine)
with db.session_scope(factory) as session:
    ladder = session.get(Ladder, int(sys.argv[2]))
    ladder.name = sys.argv[3]
engine.dispose()
"""


@pytest.mark.slow
def test_writes_of_other_processes_are_seen_within_the_poll(fast_api: Api, db_url: str) -> None:
    ladder, _, _ = _ladder_with_entries(fast_api, n=1)
    url = f"/api/ladders/{ladder}"
    _until_hit(fast_api, url)
    subprocess.run(
        [sys.executable, "-c", _OTHER_PROCESS, db_url, str(ladder), "renamed"], check=True
    )
    deadline = time.monotonic() + POLL_BOUND
    while fast_api.client.get(url).json()["name"] != "renamed":
        assert time.monotonic() < deadline, "the other process's write was never seen"
        time.sleep(0.02)


@pytest.mark.slow
def test_a_finished_match_announces_its_ladder_agents_and_match(api: Api) -> None:
    ladder, versions, _ = _ladder_with_entries(api)
    factory = api.session_factory
    match_id = new_match(factory, kind=MatchKind.ladder, version_ids=versions, ladder_id=ladder)
    with factory() as session:
        before = changes.latest(session)
        agents = {
            e.agent_id
            for e in session.scalars(select(LadderEntry).where(LadderEntry.ladder_id == ladder))
        }
    play_and_finish(factory, match_id)
    with factory() as session:
        tags = {tag for _, tag in changes.read_since(session, before)}
    assert {f"ladder:{ladder}", f"match:{match_id}", "matches"} <= tags
    assert {f"agent:{a}" for a in agents} <= tags
    assert "*" not in tags


@pytest.mark.slow
def test_a_rolled_back_write_announces_nothing(api: Api) -> None:
    factory = api.session_factory
    with factory() as session:
        before = changes.latest(session)
    with pytest.raises(RuntimeError), db.session_scope(factory) as session:
        session.add(Change(tag="ladder:1"))  # any pending write
        session.flush()
        raise RuntimeError("abort")
    with factory() as session:
        assert changes.read_since(session, before) == []


def test_the_feed_reader_picks_up_ids_that_commit_late(api: Api) -> None:
    factory = api.session_factory
    reader = FeedReader(factory)
    assert reader.poll() is None  # the first poll starts afresh
    with db.session_scope(factory) as session:
        top = changes.latest(session)
        # An id taken later but committed first, as concurrent commits may do.
        session.add(Change(id=top + 3, tag="agent:30"))
    assert reader.poll() == [(top + 3, "agent:30")]
    assert sorted(reader.gaps) == [top + 1, top + 2]
    with db.session_scope(factory) as session:
        session.add(Change(id=top + 1, tag="agent:10"))
    assert reader.poll() == [(top + 1, "agent:10")]
    assert sorted(reader.gaps) == [top + 2]
    assert reader.poll() == []


# --- rendering ahead: warming, refresh, one render per page ---------------------------------


def test_cache_keys_leave_out_defaults_and_ignore_parameter_order() -> None:
    assert cache_key("/api/ladders/1/leaderboard", "limit=50&offset=0") == (
        "/api/ladders/1/leaderboard"
    )
    assert cache_key("/api/ladders/1/leaderboard", "offset=100&limit=50") == (
        "/api/ladders/1/leaderboard?offset=100"
    )
    assert cache_key("/api/matches", "limit=15&ladder_id=2") == "/api/matches?ladder_id=2&limit=15"
    assert (
        cache_key("/api/matches", "agent_id=3&agent_id=4") == "/api/matches?agent_id=3&agent_id=4"
    )
    assert cache_key("/api/matches", "limit=") == "/api/matches?limit="


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + POLL_BOUND
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.mark.slow
def test_a_new_process_warms_the_pages_people_read(
    fast_api: Api, db_url: str, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from cow006_platform.app import create_app

    ladder, _, _ = _ladder_with_entries(fast_api)
    stranger = fast_api.user()  # a token bypasses the cache: the app's own answer
    with fast_api.session_factory() as session:
        agents = session.scalars(
            select(LadderEntry.agent_id).where(LadderEntry.ladder_id == ladder)
        ).all()
    settings = Settings(database_url=db_url, data_dir=tmp_path / "data2")
    app = create_app(settings, executor=RecordingExecutor())
    cache = app.state.page_cache
    with TestClient(app) as client:
        _until(lambda: not cache.pending and cache.entries, "the cache never warmed")
        urls = [
            f"/api/ladders/{ladder}",
            f"/api/ladders/{ladder}/leaderboard?limit=50&offset=0",  # = the default page
            f"/api/ladders/{ladder}/leaderboard?limit=200",  # as the ladder web page reads it
            *(f"/api/agents/{a}" for a in agents),
            *(f"/api/agents/{a}/ratings" for a in agents),
            *(f"/api/matches?agent_id={a}" for a in agents),
        ]
        for url in urls:
            r = client.get(url)
            assert r.status_code == 200
            assert r.headers["x-cache"] == "hit", url
            assert r.content == client.get(url, headers=stranger).content, url
        assert cache.misses == 0


@pytest.mark.slow
def test_warming_is_off_at_zero_and_never_outgrows_the_budget(
    fast_api: Api, db_url: str, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from cow006_platform.app import create_app

    _ladder_with_entries(fast_api)
    for pages, budget in ((0, 128 << 20), (1000, 1)):
        settings = Settings(
            database_url=db_url,
            data_dir=tmp_path / "data2",
            cache_warm_pages=pages,
            cache_bytes=budget,
        )
        app = create_app(settings, executor=RecordingExecutor())
        with TestClient(app):
            time.sleep(0.3)
            assert not app.state.page_cache.entries


@pytest.mark.slow
def test_a_read_page_whose_data_changes_is_rendered_again_before_the_next_read(
    fast_api: Api,
) -> None:
    ladder, versions, _ = _ladder_with_entries(fast_api)
    cache = fast_api.client.app.state.page_cache  # type: ignore[attr-defined]
    url = f"/api/ladders/{ladder}/leaderboard"
    _until_hit(fast_api, url)
    match_id = new_match(
        fast_api.session_factory, kind=MatchKind.ladder, version_ids=versions, ladder_id=ladder
    )
    play_and_finish(fast_api.session_factory, match_id)
    # Nobody reads it meanwhile: the cache renders the new leaderboard by itself.
    _until(
        lambda: url in cache.entries and cache.pending == {} and not cache.inflight,
        "the leaderboard was never rendered again",
    )
    misses = cache.misses
    board = fast_api.client.get(url)
    assert board.headers["x-cache"] == "hit"
    assert sum(row["matches"] for row in board.json()["items"]) == 4
    assert cache.misses == misses


def _counting_app(cache: PageCache, delay: float) -> tuple[Any, list[str]]:
    """A Starlette app with one cached route that sleeps, behind the cache middleware."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    renders: list[str] = []

    @cached("agent:{agent_id}")
    async def agent(request: Any) -> JSONResponse:
        renders.append(request.url.path)
        await asyncio.sleep(delay)
        return JSONResponse({"id": int(request.path_params["agent_id"]), "n": len(renders)})

    app = Starlette(routes=[Route("/api/agents/{agent_id:int}", agent)])
    app.add_middleware(PublicCacheMiddleware)
    app.state.page_cache = cache
    cache.last_poll = time.monotonic() + 3600  # live without a poller (no database here)
    return app, renders


def _cache(stale_seconds: float = 0.0) -> PageCache:
    return PageCache(
        None,  # type: ignore[arg-type]  # no feed: these tests never start its poller
        max_bytes=1 << 20,
        poll_seconds=60,
        max_age=60,
        stale_seconds=stale_seconds,
    )


def test_a_stop_leaves_the_unfinished_work_of_an_earlier_loop_alone() -> None:
    """A TestClient or an ASGI transport runs one loop per lifespan of the same app: work its
    previous loop left unfinished (that loop closed under it) must not fail the next stop,
    which waits only for its own loop's work (it failed: "attached to a different loop")."""
    cache = _cache()

    async def earlier_lifespan() -> None:
        work: asyncio.Future[None] = asyncio.get_running_loop().create_future()  # never done
        waiting = asyncio.ensure_future(cache._finished(work))
        await asyncio.sleep(0)
        waiting.cancel()

    asyncio.run(earlier_lifespan())
    assert len(cache._busy) == 1  # still listed: its loop closed before it finished
    asyncio.run(cache.stop())
    assert not cache._busy


def _entry(tags: set[str], reads: int = 0) -> Entry:
    return Entry(200, [], b"{}", b'"e"', frozenset(tags), time.monotonic() + 60, reads=reads)


def test_a_read_page_changed_elsewhere_is_answered_stale_for_a_bounded_time() -> None:
    cache = _cache(stale_seconds=0.2)
    cache.put("/api/agents/1", _entry({"agent:1"}, reads=1))
    cache.put("/api/agents/2", _entry({"agent:2"}))  # never read: not worth keeping
    cache.invalidate({"agent:1", "agent:2"})  # polled: another process's commit
    stale = cache.get("/api/agents/1")
    assert stale is not None and stale.stale_since is not None
    assert cache.get("/api/agents/2") is None
    # To be rendered again, held back for part of the bound (the next changes land on it).
    assert list(cache.deferred) == ["/api/agents/1"] and not cache.pending
    assert cache.next_due(time.monotonic()) is None
    first = stale.stale_since
    cache.invalidate({"agent:1"})  # changed again: the bound still runs from the first
    assert cache.get("/api/agents/1") is stale and stale.stale_since == first
    assert cache.next_due(first + 0.2 * 0.5) == "/api/agents/1" and not cache.deferred
    time.sleep(0.25)
    assert cache.get("/api/agents/1") is None  # past the bound: readers render it


def test_own_changes_drop_pages_at_once() -> None:
    cache = _cache(stale_seconds=10)
    cache.put("/api/agents/1", _entry({"agent:1"}, reads=5))
    cache.invalidate({"agent:1"}, local=True)
    assert cache.get("/api/agents/1") is None
    assert list(cache.pending) == ["/api/agents/1"]


def test_readers_missing_the_same_page_wait_for_one_render() -> None:
    import httpx

    async def scenario() -> None:
        app, renders = _counting_app(_cache(), delay=0.2)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            answers = await asyncio.gather(*(client.get("/api/agents/7") for _ in range(10)))
        assert renders == ["/api/agents/7"]
        assert {r.content for r in answers} == {answers[0].content}
        assert sorted(r.headers["x-cache"] for r in answers) == ["hit"] * 9 + ["miss"]

    asyncio.run(scenario())


def test_a_render_across_a_change_of_its_data_is_not_stored() -> None:
    async def scenario() -> None:
        cache = _cache()

        def render_while(tags: set[str]) -> Callable[[], Any]:
            async def render() -> Answer:
                cache.invalidate(tags)  # a change lands while the page is being built
                return Answer(200, [], b"{}", "")

            return render

        kept = await cache.fill("/api/agents/1", frozenset({"agent:1"}), render_while({"agent:2"}))
        assert kept.entry is not None and "/api/agents/1" in cache.entries
        lost = await cache.fill("/api/agents/3", frozenset({"agent:3"}), render_while({"agent:3"}))
        assert lost.entry is None and "/api/agents/3" not in cache.entries
        lost = await cache.fill("/api/agents/4", frozenset({"agent:4"}), render_while({"*"}))
        assert lost.entry is None and "/api/agents/4" not in cache.entries

    asyncio.run(scenario())


def test_a_read_page_near_its_max_age_is_queued_to_be_renewed() -> None:
    cache = _cache()
    entry = _entry({"agent:1"}, reads=1)
    entry.expires = time.monotonic() + 1  # max_age is 60: within its last tenth
    cache.put("/api/agents/1", entry)
    assert cache.get("/api/agents/1") is entry  # still answered
    assert list(cache.pending) == ["/api/agents/1"]


def test_pages_people_read_are_rendered_again_before_any_warming_left() -> None:
    cache = _cache()
    for key in ("/api/agents/1", "/api/agents/2"):
        cache.pending[key] = True  # warming still to do
    cache.put("/api/agents/3", _entry({"agent:3"}, reads=1))
    cache.invalidate({"agent:3"})
    assert list(cache.pending) == ["/api/agents/3", "/api/agents/1", "/api/agents/2"]


@pytest.mark.slow
def test_tokens_and_throttling_announce_nothing(api: Api) -> None:
    """Using, creating and revoking tokens and counting an address's failures write tables no
    public page shows: they must not drop the page caches of every API process."""
    headers = api.user()
    factory = api.session_factory
    with factory() as session:
        before = changes.latest(session)
    assert api.client.get("/api/users/me", headers=headers).status_code == 200  # first use
    made = api.client.post("/api/users/me/tokens", json={"name": "ci"}, headers=headers)
    assert made.status_code == 201, made.text
    gone = api.client.delete(f"/api/users/me/tokens/{made.json()['id']}", headers=headers)
    assert gone.status_code in (200, 204), gone.text
    bad = {"Authorization": "Bearer not-a-token-of-anyone"}
    assert api.client.get("/api/users/me", headers=bad).status_code == 401
    with factory() as session:
        assert changes.read_since(session, before) == []
