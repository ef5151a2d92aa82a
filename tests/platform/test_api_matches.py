"""/api/matches and /api/challenges: listing and filters, details, logs, stderr, ratings.

The last test plays a real challenge end to end: uploaded bots validated and played by the
workers' code run in this process (``cow006_workers.embedded.InProcessExecutor``) in the
sandbox (skipped where the sandbox does not work, except under COW006_REQUIRE_SANDBOX=1).
"""

from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers.api import BOT_SOURCE, Api, RecordingExecutor, new_match, play_and_finish

from cow006 import sandbox, verify
from cow006_platform import db, models
from cow006_platform.app import create_app
from cow006_platform.settings import Settings
from cow006_workers.embedded import InProcessExecutor


def _world(api: Api) -> dict[str, object]:
    admin, alice, bob = api.user("root", admin=True), api.user("alice"), api.user("bob")
    a, b = api.agent(alice, "ant"), api.agent(bob, "bee")
    va, vb = api.upload(alice, a)["id"], api.upload(bob, b)["id"]
    return {"admin": admin, "alice": alice, "bob": bob, "a": a, "b": b, "va": va, "vb": vb}


def test_challenges_are_unrated_matches_any_user_may_ask_for(
    api: Api, executor: RecordingExecutor
) -> None:
    w = _world(api)
    carol = api.user("carol")
    body = {"version_ids": [w["va"], w["vb"]], "seed": 12345}
    assert api.client.post("/api/challenges", json=body).status_code == 401
    r = api.client.post("/api/challenges", json=body, headers=carol)
    assert r.status_code == 201
    match = r.json()
    assert match["kind"] == "challenge" and match["rated"] is False
    # The seed of a match not played yet is for admins only (it fixes the deals).
    assert match["status"] == "queued" and match["seed"] is None
    admin_view = api.client.get(f"/api/matches/{match['id']}", headers=w["admin"]).json()
    assert admin_view["seed"] == 12345
    assert [p["label"] for p in match["participants"]] == ["ant@1", "bee@1"]
    assert [p["owner"] for p in match["participants"]] == ["alice", "bob"]
    assert executor.matches == [match["id"]]
    assert api.client.get(f"/api/matches/{match['id']}").json() == match

    # By agents: each one's newest *active* version.
    a2 = api.upload(w["alice"], w["a"])  # active (the recording executor activates)
    executor.activate = False
    api.upload(w["alice"], w["a"])  # pending: not chosen
    r = api.client.post("/api/challenges", json={"agent_ids": [w["b"], w["a"]]}, headers=carol)
    assert r.status_code == 201
    assert [p["version_id"] for p in r.json()["participants"]] == [w["vb"], a2["id"]]


@pytest.mark.slow
def test_challenges_refuse_what_cannot_play(api: Api, executor: RecordingExecutor) -> None:
    w = _world(api)
    va, vb, alice = w["va"], w["vb"], w["alice"]
    for bad in [
        {"version_ids": [va]},
        {"version_ids": [va] * 2},
        {"version_ids": list(range(1, 12))},
        {"version_ids": [va, vb], "agent_ids": [w["a"], w["b"]]},
        {},
        {"version_ids": [va, vb], "seed": -1},
        {"version_ids": [va, vb], "seed": 2**63},
    ]:
        assert api.client.post("/api/challenges", json=bad, headers=alice).status_code == 422, bad
    r = api.client.post("/api/challenges", json={"version_ids": [va, 999]}, headers=alice)
    assert r.status_code == 404
    executor.activate = False
    pending = api.upload(alice, w["a"])["id"]
    r = api.client.post("/api/challenges", json={"version_ids": [va, pending]}, headers=alice)
    assert r.status_code == 409
    lonely = api.agent(alice)
    r = api.client.post("/api/challenges", json={"agent_ids": [w["b"], lonely]}, headers=alice)
    assert r.status_code == 409 and "no active version" in r.json()["detail"]
    api.client.patch(f"/api/agents/{w['b']}", json={"disabled": True}, headers=w["admin"])
    r = api.client.post("/api/challenges", json={"version_ids": [va, vb]}, headers=alice)
    assert r.status_code == 409 and "disabled" in r.json()["detail"]
    assert executor.matches == []


def test_challenges_per_hour_are_capped(api: Api) -> None:
    api.client.app.state.settings.challenges_per_hour = 2  # type: ignore[attr-defined]
    w = _world(api)
    body = {"version_ids": [w["va"], w["vb"]]}
    for _ in range(2):
        assert api.client.post("/api/challenges", json=body, headers=w["alice"]).status_code == 201
    r = api.client.post("/api/challenges", json=body, headers=w["alice"])
    assert r.status_code == 429
    assert api.client.post("/api/challenges", json=body, headers=w["bob"]).status_code == 201


@pytest.mark.slow
def test_matches_list_filter_and_show_results(api: Api) -> None:
    w = _world(api)
    c = api.agent(w["bob"], "cat")
    vc = api.upload(w["bob"], c)["id"]
    lid = api.ladder(w["admin"], players=2)
    f = api.session_factory
    m1 = new_match(f, kind="ladder", version_ids=[w["va"], w["vb"]], ladder_id=lid)
    m2 = new_match(f, kind="ladder", version_ids=[w["vb"], vc], ladder_id=lid)
    m3 = new_match(f, kind="challenge", version_ids=[vc, w["va"], w["vb"]], rated=False)
    log = play_and_finish(f, m1, stderr=["ant says hi\n", None])

    def ids(**params: object) -> list[int]:
        page = api.client.get("/api/matches", params=params).json()
        assert page["total"] == len(page["items"])
        return [m["id"] for m in page["items"]]

    assert ids() == [m3, m2, m1]
    assert ids(agent_id=w["a"]) == [m3, m1]
    assert ids(version_id=vc) == [m3, m2]
    assert ids(ladder_id=lid) == [m2, m1]
    assert ids(kind="challenge") == [m3]
    assert ids(status="finished") == [m1]
    assert ids(status="queued", agent_id=c) == [m3, m2]
    assert ids(league_id=1) == []
    assert api.client.get("/api/matches", params={"status": "lost"}).status_code == 422
    page = api.client.get("/api/matches", params={"limit": 1, "offset": 1}).json()
    assert [m["id"] for m in page["items"]] == [m2] and page["total"] == 3

    done = api.client.get(f"/api/matches/{m1}").json()
    assert done["status"] == "finished" and done["scores"] == log["scores"]
    assert [p["score"] for p in done["participants"]] == log["scores"]
    assert [p["rank"] for p in done["participants"]] == log["ranks"]
    assert done["finished_at"] is not None
    assert api.client.get("/api/matches/9999").status_code == 404

    got = api.client.get(f"/api/matches/{m1}/log")
    assert got.status_code == 200 and got.json() == log
    verify(got.json())
    assert api.client.get(f"/api/matches/{m2}/log").status_code == 404

    # stderr: the seat's owner and admins only.
    url = f"/api/matches/{m1}/seats/0/stderr"
    assert api.client.get(url).status_code == 401
    assert api.client.get(url, headers=w["bob"]).status_code == 403
    for who in ("alice", "admin"):
        r = api.client.get(url, headers=w[who])  # type: ignore[arg-type]
        assert r.status_code == 200 and r.json()["stderr"] == "ant says hi\n"
    r = api.client.get(f"/api/matches/{m1}/seats/1/stderr", headers=w["bob"])
    assert r.status_code == 200 and r.json()["stderr"] is None
    r = api.client.get(f"/api/matches/{m1}/seats/2/stderr", headers=w["admin"])
    assert r.status_code == 404
    assert (
        api.client.get(f"/api/matches/{m1}/seats/10/stderr", headers=w["admin"]).status_code == 422
    )


def test_rating_history_and_head_to_head(api: Api) -> None:
    w = _world(api)
    lid = api.ladder(w["admin"], players=2)
    other = api.ladder(w["admin"], players=2)
    f = api.session_factory
    logs = []
    for ladder in (lid, lid, other):
        mid = new_match(f, kind="ladder", version_ids=[w["va"], w["vb"]], ladder_id=ladder)
        logs.append((mid, play_and_finish(f, mid)))
    history = api.client.get(f"/api/agents/{w['a']}/ratings").json()
    assert [p["match_id"] for p in history["items"]] == [mid for mid, _ in logs]
    point = history["items"][0]
    assert point["version"] == 1 and point["ladder_id"] == lid
    assert abs(point["conservative"] - (point["mu"] - 3 * point["sigma"])) < 1e-9
    assert point["sigma"] < 25.0 / 3
    one = api.client.get(f"/api/agents/{w['a']}/ratings", params={"ladder_id": other}).json()
    assert one["total"] == 1 and one["items"][0]["match_id"] == logs[2][0]

    h2h = api.client.get(f"/api/agents/{w['a']}/head-to-head/{w['b']}").json()
    a_ahead = sum(1 for _, log in logs if log["scores"][0] < log["scores"][1])
    ties = sum(1 for _, log in logs if log["scores"][0] == log["scores"][1])
    assert h2h["matches"] == 3 and h2h["a_ahead"] == a_ahead and h2h["ties"] == ties
    assert h2h["a_ahead"] + h2h["b_ahead"] + h2h["ties"] == 3
    r = api.client.get(f"/api/agents/{w['a']}/head-to-head/{w['b']}", params={"ladder_id": lid})
    assert r.json()["matches"] == 2
    assert api.client.get(f"/api/agents/{w['a']}/head-to-head/{w['a']}").status_code == 400
    assert api.client.get(f"/api/agents/{w['a']}/head-to-head/999").status_code == 404


@pytest.mark.slow
def test_end_to_end_upload_validate_and_play_in_the_sandbox(tmp_path: Path) -> None:
    """Real bots: uploaded, validated and played by the workers' code in this process,
    sandboxed (on SQLite alone: the databases are covered by the tests above)."""
    status = sandbox.probe()
    if not status.ok:
        if os.environ.get("COW006_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"COW006_REQUIRE_SANDBOX=1 but the sandbox does not work: {status}")
        pytest.skip(f"the sandbox does not work here: {'; '.join(status.problems)}")
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'e2e.db'}", data_dir=tmp_path / "d")
    executor = InProcessExecutor(settings)
    app = create_app(settings, executor)
    with closing(executor), TestClient(app) as client:
        api = Api(client, None, app.state.session_factory)  # type: ignore[arg-type]
        alice, bob = api.user("alice"), api.user("bob")
        a, b = api.agent(alice, "ant"), api.agent(bob, "bee")
        good = (
            "import sys\n\ndef play(view):\n    print('thinking', file=sys.stderr)\n"
            "    return max(view.hand)\n"
        )
        api.upload(alice, a, good)
        api.upload(bob, b, BOT_SOURCE)
        broken = api.upload(bob, b, "import no_such_module_anywhere\n")
        assert executor.wait_idle(120)
        versions = client.get(f"/api/agents/{b}/versions", headers=bob).json()["items"]
        assert [v["status"] for v in versions] == ["active", "rejected"]
        assert "no_such_module_anywhere" in versions[1]["reason"]
        assert client.get(f"/api/agents/{b}/versions/{broken['number']}").json()["reason"] is None

        r = client.post("/api/challenges", json={"agent_ids": [a, b], "seed": 3}, headers=bob)
        assert r.status_code == 201
        mid = r.json()["id"]
        assert executor.wait_idle(120)
        match = client.get(f"/api/matches/{mid}").json()
        assert match["status"] == "finished", match["error"]
        log = client.get(f"/api/matches/{mid}/log").json()
        verify(log)
        assert log["seed"] == 3 and log["scores"] == match["scores"]
        err = client.get(f"/api/matches/{mid}/seats/0/stderr", headers=alice).json()
        assert "thinking" in err["stderr"]
        assert client.get(f"/api/matches/{mid}/seats/0/stderr", headers=bob).status_code == 403


@pytest.mark.slow
def test_the_seed_of_a_match_not_finished_is_for_admins_only(api: Api) -> None:
    w = _world(api)
    f = api.session_factory
    lid = api.ladder(w["admin"], players=2)
    vids = [w["va"], w["vb"]]
    queued = new_match(f, kind="ladder", version_ids=vids, ladder_id=lid)
    running = new_match(f, kind="ladder", version_ids=vids, ladder_id=lid)
    done = new_match(f, kind="ladder", version_ids=vids, ladder_id=lid)
    with db.session_scope(f) as s:
        rows = {mid: s.get(models.Match, mid) for mid in (queued, running, done)}
        seeds = {mid: row.seed for mid, row in rows.items() if row is not None}
        rows[running].status = models.MatchStatus.running  # type: ignore[union-attr]
    log = play_and_finish(f, done)
    for headers in (None, w["alice"], w["bob"]):  # anonymous (cached), the seats' owners
        for _ in range(2):
            listed = api.client.get("/api/matches", headers=headers).json()["items"]
            got = {m["id"]: m["seed"] for m in listed}
            assert got == {queued: None, running: None, done: seeds[done]}
            for mid in (queued, running):
                one = api.client.get(f"/api/matches/{mid}", headers=headers).json()
                assert one["seed"] is None
                page = api.client.get(f"/matches/{mid}", headers=headers)
                assert page.status_code == 200 and str(seeds[mid]) not in page.text
    listed = api.client.get("/api/matches", headers=w["admin"]).json()["items"]
    assert {m["id"]: m["seed"] for m in listed} == seeds
    assert (
        api.client.get(f"/api/matches/{running}", headers=w["admin"]).json()["seed"]
        == (seeds[running])
    )
    # Finished: the deals are in the public log, and so is the seed.
    assert api.client.get(f"/api/matches/{done}").json()["seed"] == log["seed"] == seeds[done]
    again = {m["id"]: m["seed"] for m in api.client.get("/api/matches").json()["items"]}
    assert again == {queued: None, running: None, done: seeds[done]}  # anonymous again
