"""/api/evaluations: runs made, planned, admitted as their own class, read, promoted, discarded.

The matches here are played in-process by seeded random agents (``helpers.api``); the run
through the real workers and the sandbox is tests/workers/test_evaluations.py.
"""

from __future__ import annotations

from typing import Any

from helpers.api import Api, play_and_finish

from cow006_platform import db, models
from cow006_platform.crud.evaluations import plan


def _world(api: Api) -> dict[str, Any]:
    admin = api.user(admin=True)
    lid = api.ladder(admin, players=3)
    pool = [api.entrant(lid)[1] for _ in range(3)]
    alice = api.user("alice")
    agent = api.agent(alice, "ant")
    a = int(api.upload(alice, agent)["id"])
    b = int(api.upload(alice, agent)["id"])
    return {
        "admin": admin,
        "lid": lid,
        "pool": pool,
        "alice": alice,
        "agent": agent,
        "a": a,
        "b": b,
    }


def _matches(api: Api, run_id: int) -> list[models.Match]:
    with api.session_factory() as session:
        rows = session.query(models.Match).filter(models.Match.evaluation_id == run_id).all()
        for m in rows:
            _ = m.seats  # loaded before the session closes
        return sorted(rows, key=lambda m: (m.evaluation_slot or 0, m.id))


def test_a_paired_run_plays_both_versions_on_the_same_slots(api: Api) -> None:
    w = _world(api)
    body = {"version_id": w["b"], "baseline_id": w["a"], "ladder_id": w["lid"], "matches": 6}
    body["top"] = 3  # three opponents for two seats: each slot draws two
    r = api.client.post("/api/evaluations", json={**body, "seed": 11}, headers=w["alice"])
    assert r.status_code == 201, r.text
    run = r.json()
    assert run["players"] == 3 and sorted(run["pool"]) == sorted(w["pool"])
    assert run["status"] == "queued" and run["queued"] == 12
    matches = _matches(api, run["id"])
    assert len(matches) == 12
    assert all(m.kind is models.MatchKind.evaluation and not m.rated for m in matches)
    by_slot: dict[int, list[models.Match]] = {}
    for m in matches:
        by_slot.setdefault(m.evaluation_slot or 0, []).append(m)
    slots = plan(11, run["pool"], 3, 6)
    for i, pair in by_slot.items():
        assert len(pair) == 2
        # The same seed and opponents at the same seats; the subject's seat rotates.
        assert {m.seed for m in pair} == {slots[i].seed}
        seats = [[s.version_id for s in m.seats] for m in pair]
        assert {tuple(x) for x in seats} == {
            tuple(slots[i].seats(w["a"])),
            tuple(slots[i].seats(w["b"])),
        }
    # Held: admitted one at a time as their own class (the recording executor got one).
    assert len(api.executor.matches) == 1

    for m in matches:
        play_and_finish(api.session_factory, m.id)
    done = api.client.get(f"/api/evaluations/{run['id']}", headers=w["alice"]).json()
    assert done["status"] == "finished" and done["finished"] == 12
    assert done["version"]["finished"] == 6 and done["baseline"]["finished"] == 6
    assert 1 <= done["version"]["mean_place"] <= 3
    assert done["version"]["heads_per_round"] > 0
    comparison = done["comparison"]
    for key in ("place", "heads_per_round", "place_unpaired", "heads_per_round_unpaired"):
        assert comparison[key]["n"] == 6
        assert comparison[key]["low"] <= comparison[key]["mean"] <= comparison[key]["high"]
    mine = api.client.get("/api/evaluations", headers=w["alice"]).json()
    assert [x["id"] for x in mine["items"]] == [run["id"]]


def test_promote_enters_the_version_and_discard_drops_what_waits(api: Api) -> None:
    w = _world(api)
    body = {"version_id": w["b"], "ladder_id": w["lid"], "matches": 4}
    run = api.client.post("/api/evaluations", json=body, headers=w["alice"]).json()
    r = api.client.post(f"/api/evaluations/{run['id']}/promote", headers=w["alice"])
    assert r.status_code == 200, r.text
    assert r.json()["decision"] == "promoted"
    entries = api.client.get(f"/api/ladders/{w['lid']}/entries").json()["items"]
    assert any(e["agent_id"] == w["agent"] and e["version_id"] == w["b"] for e in entries)
    again = api.client.post(f"/api/evaluations/{run['id']}/promote", headers=w["alice"])
    assert again.status_code == 409

    other = api.client.post(
        "/api/evaluations", json={**body, "version_id": w["a"]}, headers=w["alice"]
    ).json()
    before = len(_matches(api, other["id"]))
    r = api.client.post(f"/api/evaluations/{other['id']}/discard", headers=w["alice"])
    assert r.status_code == 200 and r.json()["decision"] == "discarded"
    left = _matches(api, other["id"])
    assert len(left) < before and all(not m.held for m in left)  # only the admitted one stays


def test_what_a_run_may_not_be(api: Api) -> None:
    w = _world(api)
    post = api.client.post
    bob = api.user("bob")
    cases: list[tuple[dict[str, Any], dict[str, str], int]] = [
        ({"version_id": w["b"], "pool": [w["b"], *w["pool"][:2]]}, w["alice"], 400),
        ({"version_id": w["b"], "pool": w["pool"][:1], "players": 4}, w["alice"], 400),
        ({"version_id": w["b"], "ladder_id": w["lid"]}, bob, 403),  # not bob's version
        ({"version_id": w["b"], "ladder_id": 999}, w["alice"], 404),
        ({"version_id": w["b"], "pool": [999, *w["pool"][:1]]}, w["alice"], 404),
        ({"version_id": w["b"], "ladder_id": w["lid"], "pool": w["pool"]}, w["alice"], 422),
        ({"version_id": w["b"], "baseline_id": w["b"], "ladder_id": w["lid"]}, w["alice"], 422),
        ({"version_id": w["b"], "ladder_id": w["lid"], "matches": 10**6}, w["alice"], 422),
        ({"version_id": w["b"], "ladder_id": w["lid"], "evil": 1}, w["alice"], 422),
    ]
    for body, headers, code in cases:
        r = post("/api/evaluations", json=body, headers=headers)
        assert r.status_code == code, (body, r.text)
        assert isinstance(r.json()["detail"], str | list)
    assert (
        post("/api/evaluations", json={"version_id": w["b"], "ladder_id": w["lid"]}).status_code
        == 401
    )
    run = post(
        "/api/evaluations", json={"version_id": w["b"], "ladder_id": w["lid"]}, headers=w["alice"]
    ).json()
    # Another user's run does not exist for them; an admin sees it.
    assert api.client.get(f"/api/evaluations/{run['id']}", headers=bob).status_code == 404
    assert api.client.post(f"/api/evaluations/{run['id']}/discard", headers=bob).status_code == 404
    assert api.client.get(f"/api/evaluations/{run['id']}", headers=w["admin"]).status_code == 200


def test_runs_are_capped_per_user(api: Api) -> None:
    w = _world(api)
    body = {"version_id": w["b"], "ladder_id": w["lid"], "matches": 2}
    codes = [
        api.client.post("/api/evaluations", json=body, headers=w["alice"]).status_code
        for _ in range(3)
    ]
    assert codes == [201, 201, 429]  # evaluations_unfinished_per_user = 2
    refused = api.client.post("/api/evaluations", json=body, headers=w["alice"])
    assert "still playing" in refused.json()["detail"] and refused.headers["Retry-After"]
    too_big = {**body, "matches": 300, "baseline_id": w["a"]}  # 600 matches, over 400
    r = api.client.post("/api/evaluations", json=too_big, headers=w["alice"])
    assert r.status_code == 400 and "at most 400 matches" in r.json()["detail"]


def test_a_run_uses_the_ladders_limits(api: Api) -> None:
    w = _world(api)
    with db.session_scope(api.session_factory) as session:
        ladder = session.get(models.Ladder, w["lid"])
        assert ladder is not None
        ladder.decision_time, ladder.time_bank = 0.5, 3.0
    run = api.client.post(
        "/api/evaluations", json={"version_id": w["b"], "ladder_id": w["lid"]}, headers=w["alice"]
    ).json()
    assert (run["decision_time"], run["time_bank"]) == (0.5, 3.0)


def test_evaluation_matches_keep_to_their_slots_and_share(api: Api) -> None:
    """A run's matches are their own class: within ``evaluation_slots``, and while ladder
    work waits, within ``evaluation_share`` of the latest matches started."""
    from datetime import timedelta

    from helpers.api import new_match

    from cow006_platform import workclasses
    from cow006_platform.models import MatchKind, MatchStatus, utcnow

    w = _world(api)
    settings = api.client.app.state.settings  # type: ignore[attr-defined]
    f = api.session_factory
    run = api.client.post(
        "/api/evaluations",
        json={"version_id": w["b"], "ladder_id": w["lid"], "matches": 6},
        headers=w["alice"],
    ).json()
    admitted = [m for m in _matches(api, run["id"]) if not m.held]
    assert len(admitted) == 1  # evaluation_slots = 1
    assert workclasses.release_challenges(f, settings) == []  # the slot is taken
    play_and_finish(f, admitted[0].id)
    # The run's match just took the latest minute alone, and a ladder match now waits:
    # its share (1.0) is past evaluation_share, so nothing more is admitted.
    waiting = new_match(f, kind=MatchKind.ladder, version_ids=w["pool"][:3], ladder_id=w["lid"])
    with db.session_scope(f) as session:
        done = session.get(models.Match, admitted[0].id)
        assert done is not None
        done.started_at = utcnow() - timedelta(seconds=20)
    assert workclasses.release_challenges(f, settings) == []
    # Once no ladder work waits, the slot alone decides: the next match of the run goes.
    with db.session_scope(f) as session:
        m = session.get(models.Match, waiting)
        assert m is not None
        m.status = MatchStatus.failed
    released = workclasses.release_challenges(f, settings)
    assert len(released) == 1
    with f() as session:
        kind = session.get(models.Match, released[0]).kind  # type: ignore[union-attr]
    assert kind is MatchKind.evaluation
