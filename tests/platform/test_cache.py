"""The public page cache and the change feed behind it (cow006_platform.cache, .changes)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from apitools import Api, RecordingExecutor, new_match, play_and_finish
from sqlalchemy import select

from cow006_platform import changes, db
from cow006_platform.cache import FeedReader, route_tags
from cow006_platform.models import Change, LadderEntry, Match, MatchKind, MatchStatus
from cow006_platform.settings import Settings


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
    versions = []
    for _ in range(n):
        owner = api.user()
        agent = api.agent(owner)
        version = api.upload(owner, agent)["id"]
        r = api.client.post(
            f"/api/ladders/{ladder}/entries",
            json={"agent_id": agent, "version_id": version},
            headers=owner,
        )
        assert r.status_code in (200, 201), r.text
        versions.append(version)
    return ladder, versions, admin


def _until_hit(api: Api, url: str) -> None:
    """Read ``url`` until it is served from the cache (the feed's echo of the setup's own
    commits may drop the first answers again within one poll)."""
    deadline = time.monotonic() + 10
    while api.client.get(url).headers.get("x-cache") != "hit":
        assert time.monotonic() < deadline, f"{url} was never served from the cache"
        time.sleep(0.02)


def test_routes_and_their_tags() -> None:
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


def test_errors_are_not_cached(fast_api: Api) -> None:
    for _ in range(2):
        r = fast_api.client.get("/api/agents/999")
        assert r.status_code == 404 and r.headers.get("x-cache") != "hit"


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
    board = fast_api.client.get(url)
    assert board.headers["x-cache"] == "miss"
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


def test_writes_of_other_processes_are_seen_within_the_poll(fast_api: Api, db_url: str) -> None:
    ladder, _, _ = _ladder_with_entries(fast_api, n=1)
    url = f"/api/ladders/{ladder}"
    _until_hit(fast_api, url)
    subprocess.run(
        [sys.executable, "-c", _OTHER_PROCESS, db_url, str(ladder), "renamed"], check=True
    )
    deadline = time.monotonic() + 10
    while fast_api.client.get(url).json()["name"] != "renamed":
        assert time.monotonic() < deadline, "the other process's write was never seen"
        time.sleep(0.02)


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
