"""What a finished match drops from the page cache: the leaderboard rows its ratings crossed
(board tags, ``changes.board_tag`` and ``cache.shows``), its agents' lists of matches and
rating histories, and nothing else (cow006_platform.changes, .cache)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from helpers.api import Api, new_match, play_and_finish

from cow006_platform import changes
from cow006_platform.cache import Answer, Entry, PageCache, cache_key, moved
from cow006_platform.models import MatchKind

# --- the tags -------------------------------------------------------------------------------


def test_a_board_tag_names_its_ladder_and_the_interval_widened() -> None:
    tag = changes.board_tag(3, 2.0000004, -1.5)
    assert tag == "ladder:3@-1.500001:2.000002"
    base, low, high = changes.parse_board_tag(tag) or ("", 0.0, 0.0)
    assert base == "ladder:3" and low <= -1.5 and high >= 2.0000004
    assert changes.parse_board_tag("ladder:3") is None
    assert changes.parse_board_tag("ladder:3@x:y") is None


def test_a_board_tag_that_would_not_fit_the_feed_is_the_ladder_s() -> None:
    assert changes.board_tag(3, 1e60, 0.0) == "ladder:3"
    assert changes.board_tag(3, float("nan"), 0.0) == "ladder:3"
    assert len(changes.board_tag(10**17, -99999.123456, 99999.123456)) <= changes.TAG_LENGTH


def test_what_a_board_tag_moves() -> None:
    assert moved("ladder:1", 1.0, 2.0, {"ladder:1": (1.5, 3.0)})
    assert moved("ladder:1", 1.0, 2.0, {"ladder:1": (2.0, 3.0)})  # a shared end: a tie
    assert not moved("ladder:1", 1.0, 2.0, {"ladder:1": (2.5, 3.0)})
    assert not moved("ladder:1", 1.0, 2.0, {"ladder:1": None})  # shows no row of it
    assert moved("ladder:1", 1.0, 2.0, {})  # did not say: any move may change it


# --- the store --------------------------------------------------------------------------------


def _entry(tags: set[str], shown: dict[str, Any] | None = None, reads: int = 1) -> Entry:
    entry = Entry(200, [], b"{}", b'"x"', frozenset(tags), time.monotonic() + 60, reads=reads)
    entry.shown = shown or {}
    return entry


def _cache() -> PageCache:
    return PageCache(None, max_bytes=1 << 20, poll_seconds=1, max_age=60)  # type: ignore[arg-type]


def test_a_board_tag_drops_the_pages_whose_rows_it_crossed_and_no_other() -> None:
    cache = _cache()
    cache.put("top", _entry({"ladder:1"}, {"ladder:1": (10.0, 20.0)}))
    cache.put("middle", _entry({"ladder:1"}, {"ladder:1": (5.0, 9.5)}))
    cache.put("bottom", _entry({"ladder:1"}, {"ladder:1": (0.0, 4.0)}))
    cache.put("ladder", _entry({"ladder:1"}, {"ladder:1": None}))
    cache.put("unsaid", _entry({"ladder:1"}))
    cache.put("other", _entry({"ladder:2"}, {"ladder:2": (0.0, 20.0)}))
    cache.invalidate({changes.board_tag(1, 4.5, 9.0)}, local=True)
    assert set(cache.entries) == {"top", "bottom", "ladder", "other"}
    assert set(cache.pending) == {"middle", "unsaid"}  # read: rendered again
    cache.invalidate({"ladder:1"}, local=True)  # the ladder itself: every page of it
    assert set(cache.entries) == {"other"}


def test_a_page_rendered_across_a_move_elsewhere_on_its_board_is_stored() -> None:
    async def run() -> tuple[Entry | None, Entry | None]:
        cache = _cache()

        def render_while(tag: str, shown: dict[str, Any]) -> Any:
            async def render() -> Answer:
                cache.invalidate({tag}, local=True)
                return Answer(200, [], b"{}", "/r", shown)

            return render

        tags = frozenset({"ladder:1"})
        elsewhere = changes.board_tag(1, 30.0, 40.0)
        kept = await cache.fill("a", tags, render_while(elsewhere, {"ladder:1": (0.0, 10.0)}))
        across = changes.board_tag(1, 5.0, 40.0)
        lost = await cache.fill("b", tags, render_while(across, {"ladder:1": (0.0, 10.0)}))
        return kept.entry, lost.entry

    kept, lost = asyncio.run(run())
    assert kept is not None and kept.shown == {"ladder:1": (0.0, 10.0)}
    assert lost is None


# --- a finished match, end to end -----------------------------------------------------------


def _quiet(cache: PageCache) -> None:
    """Wait until the cache has nothing left to render and has polled its own commits."""
    deadline = time.monotonic() + 10
    while cache.pending or cache.inflight or cache.own:
        assert time.monotonic() < deadline, "the page cache never settled"
        time.sleep(0.02)


def _read_until_hit(api: Api, url: str) -> bytes:
    deadline = time.monotonic() + 10
    while True:
        r = api.client.get(url)
        assert r.status_code == 200, r.text
        if r.headers.get("x-cache") == "hit":
            return r.content
        assert time.monotonic() < deadline, f"{url} was never served from the cache"
        time.sleep(0.02)


@pytest.mark.slow
def test_a_finished_match_drops_exactly_the_pages_it_changed(api: Api) -> None:
    admin = api.user(admin=True)
    ladder = api.ladder(admin)
    entrants = [api.entrant(ladder) for _ in range(8)]
    factory = api.session_factory
    versions = [v for _, v in entrants]
    for table in (versions[:4], versions[4:]):  # spread the ratings out
        match_id = new_match(factory, kind=MatchKind.ladder, version_ids=table, ladder_id=ladder)
        play_and_finish(factory, match_id)
    cache: PageCache = api.client.app.state.page_cache
    _quiet(cache)
    board = [f"/api/ladders/{ladder}/leaderboard?limit=1&offset={k}" for k in range(8)]
    pages = [*board, f"/api/ladders/{ladder}"]
    for agent, _ in entrants:
        pages += [f"/api/agents/{agent}", f"/api/agents/{agent}/ratings"]
        pages.append(f"/api/matches?agent_id={agent}")
    before = {url: _read_until_hit(api, url) for url in pages}
    entries = {url: cache.entries[cache_key(*url.partition("?")[::2])] for url in pages}

    with factory() as session:
        since = changes.latest(session)
    table = versions[:4]
    match_id = new_match(factory, kind=MatchKind.ladder, version_ids=table, ladder_id=ladder)
    play_and_finish(factory, match_id)
    _quiet(cache)
    with factory() as session:
        tags = {tag for _, tag in changes.read_since(session, since)}
    boards = [b for b in map(changes.parse_board_tag, tags) if b is not None]

    players = {agent for agent, _ in entrants[:4]}
    for url in pages:
        kept = cache.entries.get(cache_key(*url.partition("?")[::2])) is entries[url]
        fresh = api.client.get(url, headers=admin)  # never from the cache
        assert fresh.status_code == 200
        if kept:  # a page left cached is never older than the database
            assert fresh.content == before[url], f"{url} was kept but changed"
        if url in board:
            crossed = any(moved(*b, entries[url].shown) for b in boards)
            assert kept is not crossed, url  # dropped if and only if a rating crossed it
        elif url.startswith("/api/agents/") and "/" not in url.removeprefix("/api/agents/"):
            assert kept, f"{url}: an agent's own page shows no match"
        elif url == f"/api/ladders/{ladder}":
            assert kept, "the ladder's page shows no rating"
        else:
            agent = int(url.rsplit("=", 1)[1] if "=" in url else url.split("/")[3])
            assert kept is (agent not in players), url
