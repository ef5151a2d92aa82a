"""GET /api/ladders/{id}/logs: the bulk export of a ladder's finished matches.

A resumable cursor that never skips a match finishing late, JSON lines and tar bodies whose
logs are the ones the API serves one by one, no stderr in them, a per-address rate limit, and
hostile log text that cannot break a line.
"""

from __future__ import annotations

import io
import json
import tarfile
from typing import Any

from fastapi.testclient import TestClient
from helpers.api import Api, RecordingExecutor, new_match, play_and_finish

from cow006 import Agent, View, play_match, verify
from cow006_platform import db, models, results
from cow006_platform.app import create_app
from cow006_platform.settings import Settings


def _world(api: Api, n_matches: int) -> tuple[int, list[int]]:
    """A 2-player ladder of ann's and bob's versions with ``n_matches`` queued matches."""
    admin = api.user(admin=True)
    lid = api.ladder(admin, players=2)
    versions = []
    for name in ("ann", "bob"):
        owner = api.user(name)
        versions.append(int(api.upload(owner, api.agent(owner))["id"]))
    ids = [
        new_match(api.session_factory, kind="ladder", version_ids=versions, ladder_id=lid)
        for _ in range(n_matches)
    ]
    return lid, ids


def _lines(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.decode().splitlines()]


def _export(api: Api, lid: int, **params: Any) -> Any:
    r = api.client.get(f"/api/ladders/{lid}/logs", params=params)
    assert r.status_code == 200, r.text
    return r


def test_the_cursor_waits_for_a_match_that_finishes_late(api: Api) -> None:
    lid, (m1, m2, m3, m4, m5) = _world(api, 5)
    f = api.session_factory
    for m in (m1, m2, m4):
        play_and_finish(f, m, stderr=["secret-of-ann\n", None])
    # m3 is still queued: m4 finished after it was created, so it waits behind m3.
    r = _export(api, lid)
    assert [line["match_id"] for line in _lines(r.content)] == [m1, m2]
    assert r.headers["Cow006-Next-Since"] == str(m2)
    assert r.headers["Cow006-More"] == "false"
    assert r.headers["content-type"].startswith("application/jsonl")
    assert b"secret-of-ann" not in r.content  # stderr is its owner's: never exported
    play_and_finish(f, m3)
    r = _export(api, lid, since=m2)
    assert [line["match_id"] for line in _lines(r.content)] == [m3, m4]
    # A failed match is settled: it is skipped, and holds nothing back.
    with db.session_scope(f) as session:
        match = session.get(models.Match, m5)
        assert match is not None
        match.status = models.MatchStatus.failed
    with f() as session:
        versions = [seat.version_id for seat in session.get(models.Match, m1).seats]  # type: ignore[union-attr]
    after = new_match(f, kind="ladder", version_ids=versions, ladder_id=lid)
    play_and_finish(f, after)
    r = _export(api, lid, since=m4)
    assert [line["match_id"] for line in _lines(r.content)] == [after]
    empty = _export(api, lid, since=after)
    assert empty.content == b"" and empty.headers["Cow006-Next-Since"] == str(after)


def test_lines_hold_the_logs_the_api_serves_and_pages_link_on(api: Api) -> None:
    lid, ids = _world(api, 4)
    for m in ids:
        play_and_finish(api.session_factory, m)
    first = _export(api, lid, limit=3)
    assert first.headers["Cow006-More"] == "true"
    assert first.headers["Link"] == (
        f'</api/ladders/{lid}/logs?since={ids[2]}&limit=3&format=jsonl>; rel="next"'
    )
    rest = _export(api, lid, since=first.headers["Cow006-Next-Since"], limit=3)
    assert rest.headers["Cow006-More"] == "false" and "Link" not in rest.headers
    lines = _lines(first.content) + _lines(rest.content)
    assert [line["match_id"] for line in lines] == ids
    for line in lines:
        one = api.client.get(f"/api/matches/{line['match_id']}/log").json()
        assert line["log"] == one
        verify(line["log"])
        finished = api.client.get(f"/api/matches/{line['match_id']}").json()["finished_at"]
        assert line["finished_at"].replace("+00:00", "Z")[:19] == finished[:19]


def test_a_tar_holds_an_index_and_one_file_a_log(api: Api) -> None:
    lid, ids = _world(api, 3)
    for m in ids:
        play_and_finish(api.session_factory, m)
    r = _export(api, lid, format="tar")
    assert r.headers["content-type"] == "application/x-tar"
    assert f"ladder-{lid}-logs-1-{ids[-1]}.tar" in r.headers["Content-Disposition"]
    with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
        names = tar.getnames()
        assert names == ["index.jsonl", *(f"matches/{m}.json" for m in ids)]
        index_file = tar.extractfile("index.jsonl")
        assert index_file is not None
        index = _lines(index_file.read())
        assert [e["match_id"] for e in index] == ids
        for entry in index:
            member = tar.extractfile(entry["file"])
            assert member is not None
            log = json.loads(member.read())
            verify(log)
            assert log["scores"] == entry["scores"] and log["ranks"] == entry["ranks"]


def test_bad_queries_are_refused_and_a_big_limit_is_the_page_size(
    settings: Settings, api: Api
) -> None:
    lid, ids = _world(api, 2)
    for m in ids:
        play_and_finish(api.session_factory, m)
    get = api.client.get
    assert get("/api/ladders/999/logs").status_code == 404
    for query in ("since=-1", "since=x", "format=zip", "limit=0", "since=1&since=2", "evil=1"):
        assert get(f"/api/ladders/{lid}/logs?{query}").status_code == 422, query
    big = get(f"/api/ladders/{lid}/logs", params={"limit": 10**9})
    assert big.status_code == 200 and len(_lines(big.content)) == 2


def test_exports_are_limited_per_address(settings: Settings) -> None:
    limited = settings.model_copy(update={"exports_per_minute_per_address": 2})
    executor = RecordingExecutor()
    app = create_app(limited, executor=executor)
    executor.session_factory = app.state.session_factory
    with TestClient(app) as client:
        api = Api(client, executor, app.state.session_factory)
        lid, _ = _world(api, 1)
        codes = [client.get(f"/api/ladders/{lid}/logs").status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        refused = client.get(f"/api/ladders/{lid}/logs")
        assert int(refused.headers["Retry-After"]) >= 1
        assert "too many exports" in refused.json()["detail"]


class Hostile(Agent):
    """Crashes with text made to break a line-oriented export."""

    def play(self, view: View) -> int:
        raise ValueError('x\n{"match_id": 1}\n\u2028\u2029\x1b[2J"}\\ \ud800 \x00 ' + "z" * 5000)


def test_hostile_fault_text_cannot_break_a_line(api: Api) -> None:
    lid, (m,) = _world(api, 1)
    f = api.session_factory
    with f() as session:
        match = session.get(models.Match, m)
        assert match is not None
        seed = match.seed
    log = play_match([Hostile(), Hostile()], seed=seed)
    assert log["faults"]
    with db.session_scope(f) as session:
        assert results.finish_match(session, m, log, [None, None])
    r = _export(api, lid)
    lines = _lines(r.content)
    assert len(lines) == 1 and lines[0]["match_id"] == m
    assert lines[0]["log"] == api.client.get(f"/api/matches/{m}/log").json()
    assert b"\n" not in r.content.rstrip(b"\n")
