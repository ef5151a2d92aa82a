"""/api/leagues: admins create a league of frozen versions and start it; anyone follows it."""

from __future__ import annotations

import pytest
from helpers.api import Api, RecordingExecutor, play_and_finish

from cow006_workers import scheduler


def _versions(api: Api, n: int) -> tuple[dict[str, str], list[int]]:
    alice = api.user("alice")
    return alice, [api.upload(alice, api.agent(alice, f"cow-{i}"))["id"] for i in range(n)]


@pytest.mark.slow
def test_admins_create_leagues_of_active_versions(api: Api, executor: RecordingExecutor) -> None:
    admin = api.user("root", admin=True)
    alice, vids = _versions(api, 5)
    body = {"name": "spring", "entrants": vids, "table_size": 3, "rounds": 2, "seed": 7}
    assert api.client.post("/api/leagues", json=body).status_code == 401
    assert api.client.post("/api/leagues", json=body, headers=alice).status_code == 403
    for bad in [
        {"entrants": vids[:1]},
        {"entrants": [vids[0], vids[0], vids[1]]},
        {"table_size": 11},
        {"table_size": 6},
        {"rounds": 0},
        {"entrants": [0, 1]},
    ]:
        r = api.client.post("/api/leagues", json={**body, **bad}, headers=admin)
        assert r.status_code == 422, bad
    r = api.client.post("/api/leagues", json={**body, "entrants": [*vids, 999]}, headers=admin)
    assert r.status_code == 404
    executor.activate = False
    pending = api.upload(alice, api.agent(alice))["id"]
    r = api.client.post("/api/leagues", json={**body, "entrants": [*vids, pending]}, headers=admin)
    assert r.status_code == 409
    r = api.client.post("/api/leagues", json=body, headers=admin)
    assert r.status_code == 201
    league = r.json()
    assert league["state"] == "scheduled" and league["seed"] == 7
    assert [e["version_id"] for e in league["entrants"]] == vids
    assert league["entrants"][0]["label"] == "cow-0@1"
    assert league["progress"] == {
        "round": 0,
        "matches": 0,
        "finished": 0,
        "failed": 0,
        "queued": 0,
        "running": 0,
    }
    assert api.client.post("/api/leagues", json=body, headers=admin).status_code == 409
    assert api.client.get("/api/leagues").json()["total"] == 1
    assert api.client.get(f"/api/leagues/{league['id']}", headers=admin).json() == league
    # Every match seed of the league derives from its seed: hidden from the public until the
    # league has finished (as a match's seed until the match has).
    assert api.client.get(f"/api/leagues/{league['id']}").json() == {**league, "seed": None}
    assert api.client.get("/api/leagues").json()["items"][0]["seed"] is None
    assert api.client.get("/api/leagues/42").status_code == 404


def test_a_league_runs_round_by_round_to_final_standings(
    api: Api, executor: RecordingExecutor
) -> None:
    admin = api.user("root", admin=True)
    _, vids = _versions(api, 5)
    body = {"name": "autumn", "entrants": vids, "table_size": 3, "rounds": 2}
    lid = api.client.post("/api/leagues", json=body, headers=admin).json()["id"]
    standings = api.client.get(f"/api/leagues/{lid}/standings").json()
    assert standings["final"] is False and standings["state"] == "scheduled"
    assert {row["matches"] for row in standings["standings"]} == {0}

    r = api.client.post(f"/api/leagues/{lid}/start", headers=admin)
    assert r.status_code == 200
    assert r.json()["state"] == "running" and r.json()["progress"]["round"] == 1
    first = list(executor.matches)
    assert len(first) == 2  # 5 entrants at tables of at most 3: 3 + 2
    assert api.client.post(f"/api/leagues/{lid}/start", headers=admin).status_code == 409
    schedule = api.client.get(f"/api/leagues/{lid}/schedule").json()
    assert [m["id"] for m in schedule["items"]] == first
    assert all(m["kind"] == "league" and m["league_round"] == 1 for m in schedule["items"])

    # Play the league as the executor would: each match, then what follows it.
    queue = list(first)
    while queue:
        mid = queue.pop(0)
        play_and_finish(api.session_factory, mid)
        queue += scheduler.advance_league(api.session_factory, lid)
    league = api.client.get(f"/api/leagues/{lid}").json()
    assert league["state"] == "finished"
    assert league["progress"]["round"] == 2 and league["progress"]["finished"] == 4
    standings = api.client.get(f"/api/leagues/{lid}/standings").json()
    assert standings["final"] is True
    rows = standings["standings"]
    assert [row["position"] for row in rows] == [1, 2, 3, 4, 5]
    assert sorted(row["version_id"] for row in rows) == sorted(vids)
    assert sum(row["matches"] for row in rows) == 3 + 2 + 3 + 2
    assert api.client.get(f"/api/leagues/{lid}/schedule").json()["total"] == 4
    assert api.client.get("/api/matches", params={"league_id": lid}).json()["total"] == 4
