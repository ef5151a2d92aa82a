"""The parts pages are built from (cow006_platform.cache.Fragments): a finished match's JSON
and a ladder's whole board, kept under the tags of their data; the pages built from them are
the bytes the models write, and a finished match leaves no page or part showing old data."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from helpers.api import Api, new_match, play_and_finish
from sqlalchemy import update

from cow006_platform import changes, crud, db, ratings
from cow006_platform.cache import Fragments, PageCache, cache_key
from cow006_platform.crud._rows import Paging
from cow006_platform.models import Agent, Ladder, MatchKind, User

# Names the API would refuse, stored as an older release or an admin's SQL might have: the
# parts must write them as the models do (escapes, quotes, line separators, astral planes).
HOSTILE = ['"},{"rank":1,', "</script><b>x", "\u2028\n\\", "\u2028\u2029\U0001f404", "é" * 40]

# --- the parts store ---------------------------------------------------------------------------


def test_a_part_is_dropped_with_its_tags_and_everything() -> None:
    parts = Fragments(1 << 20)
    assert parts.put("a", "A", frozenset({"match:1"}), 10, parts.generation())
    assert parts.put("b", "B", frozenset({"match:2"}), 10, parts.generation())
    parts.invalidate({"match:1", "ladder:3"})
    assert parts.get("a") is None and parts.get("b") == "B"
    parts.invalidate({changes.EVERYTHING})
    assert parts.get("b") is None and len(parts) == 0 and parts.size == 0


def test_a_part_built_across_a_change_of_its_data_is_not_kept() -> None:
    parts = Fragments(1 << 20)
    since = parts.generation()
    parts.invalidate({"match:2"})  # another part's data: no matter
    assert parts.put("a", "A", frozenset({"match:1"}), 10, since)
    since = parts.generation()
    parts.invalidate({"match:1"})  # announced while "b" (showing match 1) was built
    assert not parts.put("b", "B", frozenset({"match:1"}), 10, since)
    assert parts.get("b") is None
    since = parts.generation()
    parts.invalidate({changes.EVERYTHING})
    assert not parts.put("c", "C", frozenset({"match:9"}), 10, since)


def test_a_part_built_across_more_changes_than_remembered_is_not_kept() -> None:
    parts = Fragments(1 << 20)
    since = parts.generation()
    for n in range(2000):  # more than the changes remembered: assume the worst
        parts.invalidate({f"agent:{n}"})
    assert not parts.put("a", "A", frozenset({"match:1"}), 10, since)


def test_parts_stay_within_their_budget() -> None:
    parts = Fragments(8000)
    for n in range(50):
        parts.put(f"p{n}", n, frozenset({f"match:{n}"}), 900, parts.generation())
    assert parts.size <= 8000 and parts.get("p49") == 49 and parts.get("p0") is None
    assert not parts.put("huge", 0, frozenset(), 8000 // 8 + 1, parts.generation())


def test_one_build_at_a_time() -> None:
    parts = Fragments(1 << 20)
    builds: list[int] = []

    def build() -> None:
        with parts.building("k"):
            if parts.get("k") is None:
                since = parts.generation()
                builds.append(1)
                time.sleep(0.05)
                parts.put("k", "built", frozenset({"ladder:1"}), 10, since)

    threads = [threading.Thread(target=build) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == [1] and parts.get("k") == "built"


def test_the_page_cache_drops_parts_with_its_pages() -> None:
    cache = PageCache(None, max_bytes=1 << 20, poll_seconds=1, max_age=60, stale_seconds=5)  # type: ignore[arg-type]
    cache.fragments.put("board:1", ["x"], frozenset({"ladder:1"}), 10, 0)
    cache.invalidate({"ladder:1"})  # from elsewhere: a page would be kept stale, a part not
    assert cache.fragments.get("board:1") is None
    cache.fragments.put("match:4", "{}", frozenset({"match:4"}), 10, cache.fragments.generation())
    cache.clear()  # the feed is away: nothing is served from memory
    assert len(cache.fragments) == 0


# --- pages built from parts are the models' bytes ---------------------------------------------


def _arena(api: Api, entrants: int = 6, matches: int = 3) -> tuple[int, list[tuple[int, int]]]:
    admin = api.user(admin=True)
    ladder = api.ladder(admin)
    seated = [api.entrant(ladder) for _ in range(entrants)]
    versions = [v for _, v in seated]
    for n in range(matches):
        table = [versions[(n + k) % entrants] for k in range(4)]
        match_id = new_match(
            api.session_factory, kind=MatchKind.ladder, version_ids=table, ladder_id=ladder
        )
        play_and_finish(api.session_factory, match_id)
    new_match(
        api.session_factory, kind=MatchKind.ladder, version_ids=versions[:4], ladder_id=ladder
    )
    return ladder, seated


def _hostile(api: Api, seated: list[tuple[int, int]]) -> None:
    """Give some agents and their owners ``HOSTILE`` names, bypassing the API's checks."""
    with db.session_scope(api.session_factory) as session:
        for (agent_id, _), name in zip(seated, HOSTILE, strict=False):
            agent = session.get(Agent, agent_id)
            assert agent is not None
            agent.name = name
            owner = session.get(User, agent.owner_id)
            assert owner is not None
            owner.name = name[::-1]


def _ratings_truth(session: Any, agent: int, paging: Paging, ladder: int | None) -> bytes:
    page = crud.agents.rating_history(session, agent, paging, ladder)
    return page.model_dump_json().encode()


def test_pages_from_parts_are_the_bytes_of_the_models(api: Api) -> None:
    ladder, seated = _arena(api)
    _hostile(api, seated)
    parts = Fragments(1 << 24)
    pagings = [Paging(50, 0), Paging(2, 0), Paging(2, 3), Paging(3, 5), Paging(5, 100)]
    pagings += [Paging(1, 1), Paging(2, 2)]  # a page past the end of a short history
    with api.session_factory() as session:
        for _ in range(2):  # cold, then from the parts held
            for paging in pagings:
                whole = crud.ladders.leaderboard(session, ladder, paging).model_dump_json()
                built = crud.ladders.leaderboard_json(session, ladder, paging, parts)
                assert built == whole.encode()
                for agent, _ in seated:
                    filters: dict[str, Any] = {"agent_id": agent}
                    whole = crud.matches.list_matches(session, paging, **filters)
                    built = crud.matches.list_matches_json(session, paging, parts, **filters)
                    assert built == whole.model_dump_json().encode()
                    for of in (None, ladder, ladder + 1):  # every ladder, this one, another
                        whole_history = _ratings_truth(session, agent, paging, of)
                        history = crud.agents.rating_history_json(session, agent, paging, of)
                        assert history == whole_history
                whole = crud.matches.list_matches(session, paging, ladder_id=ladder)
                built = crud.matches.list_matches_json(session, paging, parts, ladder_id=ladder)
                assert built == whole.model_dump_json().encode()
    assert parts.get(f"board:{ladder}") is not None
    held = [k for k in range(1, 5) if parts.get(f"match:{k}") is not None]
    assert held == [1, 2, 3]  # the finished ones; the queued match changes yet


def test_a_rating_history_from_points_written_before_is_not_fooled_by_a_rerate(
    api: Api,
) -> None:
    """A rerate deletes the ladder's points and writes them anew (on SQLite under the same
    ids): the history, its points' JSON reused by their values, is what the models write
    from the new rows; an unknown agent is a 404 both ways."""
    ladder, seated = _arena(api, matches=4)
    agent = seated[0][0]
    with api.session_factory() as session:
        before = crud.agents.rating_history_json(session, agent, Paging(50, 0))
        assert before == _ratings_truth(session, agent, Paging(50, 0), None)
    with db.session_scope(api.session_factory) as session:
        # Other figures for the same matches: the points rewritten under other values.
        session.execute(update(Ladder).where(Ladder.id == ladder).values(mu=30.0, sigma=5.0))
        assert ratings.rerate(session, ladder) == 4
    with api.session_factory() as session:
        after = crud.agents.rating_history_json(session, agent, Paging(50, 0))
        assert after == _ratings_truth(session, agent, Paging(50, 0), None)
        assert after != before
        with pytest.raises(crud.NotFound):
            crud.agents.rating_history_json(session, 424242, Paging(50, 0))
        with pytest.raises(crud.NotFound):
            crud.agents.rating_history(session, 424242, Paging(50, 0))


# --- a finished match, end to end ---------------------------------------------------------------


def _quiet(cache: PageCache) -> None:
    """Wait until the cache has polled the feed past every commit and rendered what it
    wanted to."""
    # Two polls more than now: the second began after this call, so after the commits.
    polls = cache.polls + 2
    # A bound for a cache that never settles, not a timing: on a loaded machine (the suite
    # in parallel, other work beside it) settling has taken over 15 s.
    deadline = time.monotonic() + 60
    while cache.polls < polls or not cache.settled:
        assert time.monotonic() < deadline, (
            "the page cache never settled: "
            f"pending {list(cache.pending)[:5]}, deferred {list(cache.deferred)[:5]},"
            f" inflight {list(cache.inflight)[:5]}, ahead {cache.ahead},"
            f" own {sorted(cache.own)[:5]} ({len(cache.own)}),"
            f" polls {cache.polls} of {polls}, last {time.monotonic() - cache.last_poll:.1f} s ago"
        )
        time.sleep(0.02)


def _truth(api: Api, url: str) -> bytes:
    """The page as the models write it from the database, without the cache or its parts."""
    path, _, query = url.partition("?")
    params = dict(p.split("=") for p in query.split("&")) if query else {}
    paging = Paging(int(params.pop("limit", 50)), int(params.pop("offset", 0)))
    with api.session_factory() as session:
        if path.endswith("/leaderboard"):
            return (
                crud.ladders.leaderboard(session, int(path.split("/")[3]), paging)
                .model_dump_json()
                .encode()
            )
        if path == "/api/matches":
            filters = {k: int(v) for k, v in params.items()}
            return crud.matches.list_matches(session, paging, **filters).model_dump_json().encode()
        if path.endswith("/ratings"):
            return _ratings_truth(session, int(path.split("/")[3]), paging, None)
    raise AssertionError(f"no truth for {url}")


@pytest.mark.slow
def test_a_finished_match_leaves_no_page_or_part_showing_old_data(api: Api) -> None:
    """Matches finished as by a worker (another process: the cache hears them from the
    feed only, and keeps read pages stale while it renders them again), while the pages are
    read: every page it keeps afterwards, and every part, is what the database says now;
    the parts of the matches that did not change are still held."""
    ladder, seated = _arena(api, entrants=8, matches=4)
    cache: PageCache = api.client.app.state.page_cache
    assert cache._unsubscribe is not None
    cache._unsubscribe()  # the writes below reach it through the feed alone
    versions = [v for _, v in seated]
    pages = [f"/api/ladders/{ladder}/leaderboard?limit=2&offset={k}" for k in range(0, 8, 2)]
    pages += [f"/api/ladders/{ladder}/leaderboard", f"/api/matches?ladder_id={ladder}"]
    pages += [f"/api/matches?agent_id={agent}" for agent, _ in seated]
    pages += [f"/api/agents/{agent}/ratings" for agent, _ in seated]
    pages += [f"/api/agents/{agent}/ratings?limit=2&offset=1" for agent, _ in seated[:3]]
    stop = threading.Event()

    def read() -> None:  # readers all along: renders race the changes
        while not stop.is_set():
            for url in pages:
                assert api.client.get(url).status_code == 200

    for url in pages:
        api.client.get(url)
    _quiet(cache)
    reader = threading.Thread(target=read)
    reader.start()
    kept = boards = 0
    try:
        for n in range(6):
            old = {k: cache.fragments.get(f"match:{k}") for k in range(1, 5)}
            table = [versions[(3 * n + k) % len(versions)] for k in range(4)]
            match_id = new_match(
                api.session_factory, kind=MatchKind.ladder, version_ids=table, ladder_id=ladder
            )
            play_and_finish(api.session_factory, match_id)
            time.sleep(0.01 * n)  # the next match lands at another point of the renders
            _quiet(cache)
            for url in pages:
                entry = cache.entries.get(cache_key(*url.partition("?")[::2]))
                if entry is not None:
                    kept += 1
                    assert entry.stale_since is None, f"{url} still stale after settling"
                    assert entry.body == _truth(api, url), f"{url} was kept but changed"
            board = cache.fragments.get(f"board:{ladder}")
            if board is not None:
                boards += 1
                whole = _truth(api, f"/api/ladders/{ladder}/leaderboard?limit=1000")
                assert whole.startswith(b'{"items":[' + ",".join(board).encode() + b"]")
            for k, part in old.items():  # untouched matches keep their parts
                if part is not None:
                    assert cache.fragments.get(f"match:{k}") is part
    finally:
        stop.set()
        reader.join()
    assert kept > len(pages) and boards > 0  # the checks above did check something
