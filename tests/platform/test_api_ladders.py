"""/api/ladders: admin-made ladders, owners' entries (switching versions), the leaderboard."""

from __future__ import annotations

import pytest
from helpers.api import Api, RecordingExecutor, new_match, play_and_finish
from sqlalchemy import select

from cow006_platform import models, ratings


def test_admins_create_ladders_with_defaults(api: Api) -> None:
    admin, alice = api.user("root", admin=True), api.user("alice")
    assert api.client.post("/api/ladders", json={"name": "main"}).status_code == 401
    assert api.client.post("/api/ladders", json={"name": "main"}, headers=alice).status_code == 403
    r = api.client.post("/api/ladders", json={"name": "main"}, headers=admin)
    assert r.status_code == 201
    ladder = r.json()
    assert ladder["state"] == "open" and ladder["players"] == 4 and ladder["entries"] == 0
    assert ladder["draw_probability"] == ratings.DEFAULT_DRAW_PROBABILITY
    assert (ladder["mu"], ladder["sigma"]) == (25.0, 25.0 / 3)
    assert api.client.post("/api/ladders", json={"name": "main"}, headers=admin).status_code == 409
    for bad in [
        {"players": 1},
        {"players": 11},
        {"sigma": 0},
        {"draw_probability": 1},
        {"decision_time": 0},
        {"time_bank": -1},
        {"state": "open"},
    ]:
        r = api.client.post("/api/ladders", json={"name": "x-ladder", **bad}, headers=admin)
        assert r.status_code == 422, bad
    r = api.client.post(
        "/api/ladders",
        json={"name": "duel", "players": 2, "mu": 30, "sigma": 5, "draw_probability": 0.1},
        headers=admin,
    )
    assert r.json()["players"] == 2 and r.json()["draw_probability"] == 0.1
    listed = api.client.get("/api/ladders").json()
    assert [lad["name"] for lad in listed["items"]] == ["main", "duel"]
    assert api.client.get(f"/api/ladders/{ladder['id']}").json() == ladder


def test_ladder_states_are_set_by_admins(api: Api) -> None:
    admin, alice = api.user("root", admin=True), api.user("alice")
    lid = api.ladder(admin)
    r = api.client.patch(f"/api/ladders/{lid}", json={"state": "paused"}, headers=alice)
    assert r.status_code == 403
    for state in ["paused", "closed", "open"]:
        r = api.client.patch(f"/api/ladders/{lid}", json={"state": state}, headers=admin)
        assert r.status_code == 200 and r.json()["state"] == state
    r = api.client.patch(f"/api/ladders/{lid}", json={"state": "gone"}, headers=admin)
    assert r.status_code == 422
    assert (
        api.client.patch("/api/ladders/99", json={"state": "open"}, headers=admin).status_code
        == 404
    )


@pytest.mark.slow
def test_entries_switch_versions_and_withdraw(api: Api, executor: RecordingExecutor) -> None:
    admin, alice, bob = api.user("root", admin=True), api.user("alice"), api.user("bob")
    lid = api.ladder(admin)
    aid = api.agent(alice, "cow")
    v1, v2 = api.upload(alice, aid), api.upload(alice, aid)
    url = f"/api/ladders/{lid}/entries"
    r = api.client.post(url, json={"agent_id": aid, "version_id": v1["id"]}, headers=alice)
    assert r.status_code == 201
    assert r.json()["label"] == "cow@1" and r.json()["owner"] == "alice"
    r = api.client.post(url, json={"agent_id": aid, "version_id": v2["id"]}, headers=alice)
    assert r.status_code == 200 and r.json()["version"] == 2  # switched, not a second entry
    entries = api.client.get(url).json()
    assert entries["total"] == 1 and entries["items"][0]["version_id"] == v2["id"]
    assert api.client.get(f"/api/ladders/{lid}").json()["entries"] == 1

    # Someone else's agent, a version of another agent, a version that is not active.
    r = api.client.post(url, json={"agent_id": aid, "version_id": v1["id"]}, headers=bob)
    assert r.status_code == 403
    bid = api.agent(bob)
    executor.activate = False
    pending = api.upload(bob, bid)
    r = api.client.post(url, json={"agent_id": bid, "version_id": v1["id"]}, headers=bob)
    assert r.status_code == 404
    r = api.client.post(url, json={"agent_id": bid, "version_id": pending["id"]}, headers=bob)
    assert r.status_code == 409 and "pending" in r.json()["detail"]
    r = api.client.post(url, json={"agent_id": 999, "version_id": v1["id"]}, headers=bob)
    assert r.status_code == 404

    assert api.client.delete(f"{url}/{aid}", headers=bob).status_code == 403
    assert api.client.delete(f"{url}/{aid}", headers=alice).status_code == 204
    assert api.client.delete(f"{url}/{aid}", headers=alice).status_code == 404
    assert api.client.get(url).json()["total"] == 0
    withdrawn = api.client.get(url, params={"include_withdrawn": True}).json()
    assert withdrawn["items"][0]["active"] is False
    # Entering again re-activates the same entry.
    r = api.client.post(url, json={"agent_id": aid, "version_id": v1["id"]}, headers=alice)
    assert r.status_code == 200 and r.json()["active"] is True

    api.client.patch(f"/api/ladders/{lid}", json={"state": "closed"}, headers=admin)
    r = api.client.post(url, json={"agent_id": aid, "version_id": v2["id"]}, headers=alice)
    assert r.status_code == 409 and "closed" in r.json()["detail"]


@pytest.mark.slow
def test_leaderboard_ranks_by_conservative_rating(api: Api) -> None:
    admin, alice = api.user("root", admin=True), api.user("alice")
    lid = api.ladder(admin, players=2)
    agents = [api.agent(alice, f"cow-{i}") for i in range(4)]
    versions = [api.upload(alice, a)["id"] for a in agents]
    for a, v in zip(agents, versions, strict=True):
        r = api.client.post(
            f"/api/ladders/{lid}/entries", json={"agent_id": a, "version_id": v}, headers=alice
        )
        assert r.status_code == 201
    # Before any match: everyone at the ladder's initial rating, in order of entry.
    board = api.client.get(f"/api/ladders/{lid}/leaderboard").json()
    assert [row["agent_id"] for row in board["items"]] == agents
    assert board["items"][0]["matches"] == 0 and board["items"][0]["win_rate"] is None
    assert board["items"][0]["conservative"] == 25.0 - 3 * 25.0 / 3

    # Two real rated matches through results.finish_match move the ratings.
    for pair in [(versions[2], versions[3]), (versions[2], versions[1])]:
        mid = new_match(api.session_factory, kind="ladder", version_ids=list(pair), ladder_id=lid)
        play_and_finish(api.session_factory, mid)
    with api.session_factory() as session:
        expected = session.execute(
            select(models.Rating.version_id, models.Rating.conservative)
        ).all()
    board = api.client.get(f"/api/ladders/{lid}/leaderboard").json()
    rows = board["items"]
    assert [r["rank"] for r in rows] == [1, 2, 3, 4]
    keys = [r["conservative"] for r in rows]
    assert keys == sorted(keys, reverse=True)
    by_version = {r["version_id"]: r for r in rows}
    for vid, cons in expected:
        assert abs(by_version[vid]["conservative"] - cons) < 1e-9
    v2 = by_version[versions[2]]
    assert v2["matches"] == 2 and v2["win_rate"] == v2["wins"] / 2
    assert abs(v2["mu"] - 3 * v2["sigma"] - v2["conservative"]) < 1e-9

    page = api.client.get(f"/api/ladders/{lid}/leaderboard", params={"limit": 2, "offset": 2})
    assert [r["rank"] for r in page.json()["items"]] == [3, 4]
    assert page.json()["total"] == 4
    # A disabled agent leaves the leaderboard.
    api.client.patch(f"/api/agents/{agents[0]}", json={"disabled": True}, headers=admin)
    assert api.client.get(f"/api/ladders/{lid}/leaderboard").json()["total"] == 3
    assert api.client.get("/api/ladders/99/leaderboard").status_code == 404
