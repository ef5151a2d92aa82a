"""Challenges under abuse: caps per user, per address and in all, per opponent version, the
owner's refusal, per-address upload caps, and the admission of held challenges.

Issue 14: the only limits were 30 challenges an hour and 50 uploads a day *per user*, so
more accounts bypassed them, and anyone could queue any amount of work against anyone's
version.  Each test here fails on that code.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from helpers.api import Api, RecordingExecutor, new_match, play_and_finish
from sqlalchemy import select

from cow006_platform import db, workclasses
from cow006_platform.models import Match, MatchKind, MatchStatus, utcnow
from cow006_platform.settings import Settings


def _settings(api: Api) -> Settings:
    settings: Settings = api.client.app.state.settings  # type: ignore[attr-defined]
    return settings


def _from(api: Api, address: str) -> TestClient:
    """A client of the same (started) app whose requests come from ``address``."""
    return TestClient(api.client.app, client=(address, 40000))


def _world(api: Api) -> dict[str, Any]:
    admin, alice, bob = api.user("root", admin=True), api.user("alice"), api.user("bob")
    a, b, b2 = api.agent(alice, "ant"), api.agent(bob, "bee"), api.agent(bob, "bug")
    va, vb, vb2 = (api.upload(h, x)["id"] for h, x in ((alice, a), (bob, b), (bob, b2)))
    return {"admin": admin, "alice": alice, "bob": bob, "a": a, "b": b, "va": va, "vb": vb,
            "vb2": vb2}  # fmt: skip


def _refused(r: Any, status: int = 429) -> str:
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and detail.endswith(".") and "\n" not in detail
    if status == 429:
        assert int(r.headers["retry-after"]) > 0
    return detail


@pytest.mark.slow
def test_unfinished_challenges_are_capped_per_user(api: Api) -> None:
    _settings(api).challenges_queued_per_user = 2
    w = _world(api)
    body = {"version_ids": [w["vb"], w["vb2"]]}
    made = []
    for _ in range(2):
        r = api.client.post("/api/challenges", json=body, headers=w["bob"])
        assert r.status_code == 201, r.text
        made.append(r.json()["id"])
    detail = _refused(api.client.post("/api/challenges", json=body, headers=w["bob"]))
    assert "2 challenges waiting or being played" in detail
    # Another user is not held back by bob's queue.
    r = api.client.post(
        "/api/challenges", json={"version_ids": [w["va"], w["vb"]]}, headers=w["alice"]
    )
    assert r.status_code == 201, r.text
    # Once one of bob's is played, bob may ask again.
    play_and_finish(api.session_factory, made[0])
    assert api.client.post("/api/challenges", json=body, headers=w["bob"]).status_code == 201


def test_unfinished_challenges_are_capped_in_all(api: Api) -> None:
    _settings(api).challenges_queued = 3
    w = _world(api)
    users = [api.user() for _ in range(4)]
    body = {"version_ids": [w["vb"], w["vb2"]]}
    for h in users[:3]:
        assert api.client.post("/api/challenges", json=body, headers=h).status_code == 201
    detail = _refused(api.client.post("/api/challenges", json=body, headers=users[3]))
    assert "The arena has 3 challenges waiting" in detail


@pytest.mark.slow
def test_a_version_of_another_owner_is_seated_in_a_few_unfinished_challenges(api: Api) -> None:
    _settings(api).challenges_per_opponent = 2
    w = _world(api)
    carol, dave = api.user("carol"), api.user("dave")
    body = {"version_ids": [w["va"], w["vb"]]}
    assert api.client.post("/api/challenges", json=body, headers=carol).status_code == 201
    assert api.client.post("/api/challenges", json=body, headers=dave).status_code == 201
    detail = _refused(api.client.post("/api/challenges", json=body, headers=carol))
    assert detail.startswith("ant@1 already has 2 challenges")
    # The owner's own versions are not limited by this rule: bob seats his two agents.
    own = {"version_ids": [w["vb"], w["vb2"]]}
    assert api.client.post("/api/challenges", json=own, headers=w["bob"]).status_code == 201


def test_an_owner_may_refuse_challenges(api: Api, executor: RecordingExecutor) -> None:
    w = _world(api)
    carol = api.user("carol")
    b = w["b"]
    # Only the owner (or an admin) says so; only an admin disables.
    assert (
        api.client.patch(f"/api/agents/{b}", json={"accepts_challenges": False}).status_code == 401
    )
    r = api.client.patch(f"/api/agents/{b}", json={"accepts_challenges": False}, headers=carol)
    assert r.status_code == 403
    r = api.client.patch(f"/api/agents/{b}", json={"disabled": True}, headers=w["bob"])
    assert r.status_code == 403
    assert api.client.patch(f"/api/agents/{b}", json={}, headers=w["bob"]).status_code == 422
    r = api.client.patch(f"/api/agents/{b}", json={"accepts_challenges": False}, headers=w["bob"])
    assert r.status_code == 200 and r.json()["accepts_challenges"] is False
    assert r.json()["disabled"] is False
    assert api.client.get(f"/api/agents/{b}").json()["accepts_challenges"] is False

    before = list(executor.matches)
    body = {"version_ids": [w["va"], w["vb"]]}
    detail = _refused(api.client.post("/api/challenges", json=body, headers=carol), 403)
    assert detail == "The owner of bee does not accept challenges from other users."
    r = api.client.post("/api/challenges", json={"agent_ids": [w["a"], b]}, headers=w["alice"])
    _refused(r, 403)
    assert executor.matches == before
    with api.session_factory() as session:
        assert session.scalar(select(Match.id).where(Match.kind == MatchKind.challenge)) is None
    # The owner still plays his own agent.
    own = {"version_ids": [w["vb"], w["vb2"]]}
    assert api.client.post("/api/challenges", json=own, headers=w["bob"]).status_code == 201
    # And says yes again.
    r = api.client.patch(f"/api/agents/{b}", json={"accepts_challenges": True}, headers=w["bob"])
    assert r.json()["accepts_challenges"] is True
    assert api.client.post("/api/challenges", json=body, headers=carol).status_code == 201


def test_challenges_are_capped_per_address_across_accounts(api: Api) -> None:
    settings = _settings(api)
    settings.challenges_per_hour_per_address = 3
    w = _world(api)
    accounts = [api.user() for _ in range(4)]  # registered elsewhere; they ask from one place
    here, there = _from(api, "203.0.113.5"), _from(api, "198.51.100.8")
    body = {"version_ids": [w["vb"], w["vb2"]]}
    for h in accounts[:3]:
        assert here.post("/api/challenges", json=body, headers=h).status_code == 201
    detail = _refused(here.post("/api/challenges", json=body, headers=accounts[3]))
    assert "from one address, whatever the account" in detail
    assert there.post("/api/challenges", json=body, headers=accounts[3]).status_code == 201


@pytest.mark.slow
def test_unfinished_challenges_are_capped_per_address(api: Api) -> None:
    settings = _settings(api)
    settings.challenges_queued_per_address = 2
    w = _world(api)
    accounts = [api.user() for _ in range(3)]
    # Addresses of one IPv6 /64 are one address: a subscriber has the whole /64.
    one = _from(api, "2001:db8:7:7::1")
    other = _from(api, "2001:db8:7:7:ffff::2")
    body = {"version_ids": [w["vb"], w["vb2"]]}
    assert one.post("/api/challenges", json=body, headers=accounts[0]).status_code == 201
    assert other.post("/api/challenges", json=body, headers=accounts[1]).status_code == 201
    detail = _refused(one.post("/api/challenges", json=body, headers=accounts[2]))
    assert "from this address are waiting" in detail
    elsewhere = _from(api, "2001:db8:7:8::1")
    assert elsewhere.post("/api/challenges", json=body, headers=accounts[2]).status_code == 201


def test_uploads_are_capped_per_address_across_accounts(api: Api) -> None:
    _settings(api).uploads_per_day_per_address = 2
    here, there = _from(api, "192.0.2.44"), _from(api, "192.0.2.45")
    accounts = [api.user() for _ in range(3)]
    agents = [api.agent(h) for h in accounts]

    def upload(client: TestClient, i: int) -> Any:
        return client.post(
            f"/api/agents/{agents[i]}/versions",
            files={"file": ("bot.py", f"def play(view):\n    return max(view.hand)\n# {i}\n")},
            headers=accounts[i],
        )

    assert upload(here, 0).status_code == 201
    assert upload(here, 1).status_code == 201
    detail = _refused(upload(here, 2))
    assert "uploads a day may come from one address" in detail
    assert upload(there, 2).status_code == 201
    with api.session_factory() as session:
        assert (
            session.scalars(select(Match.id).where(Match.kind == MatchKind.challenge)).all() == []
        )


def test_challenges_wait_held_and_are_admitted_one_slot_at_a_time(
    api: Api, executor: RecordingExecutor
) -> None:
    """A challenge is queued in the database and reaches the workers only when admitted."""
    w = _world(api)
    settings = _settings(api)
    body = {"version_ids": [w["vb"], w["vb2"]]}
    first = api.client.post("/api/challenges", json=body, headers=w["bob"]).json()["id"]
    second = api.client.post("/api/challenges", json=body, headers=w["bob"]).json()["id"]
    assert executor.matches == [first]  # one slot (challenge_slots = 1)
    with api.session_factory() as session:
        held = {m.id: m.held for m in session.scalars(select(Match))}
    assert held == {first: False, second: True}
    assert workclasses.release_challenges(api.session_factory, settings) == []
    play_and_finish(api.session_factory, first)
    assert workclasses.release_challenges(api.session_factory, settings) == [second]
    assert workclasses.release_challenges(api.session_factory, settings) == []


@pytest.mark.slow
def test_admission_keeps_challenges_to_their_share_while_ladder_work_waits(
    api: Api,
) -> None:
    w = _world(api)
    settings = _settings(api)
    settings.challenge_slots = 4
    f = api.session_factory
    lid = api.ladder(w["admin"], players=2)
    now = utcnow()
    # The last minute: a challenge played 20 s, a ladder match 20 s: a share of a half.
    done = [
        new_match(f, kind=MatchKind.challenge, version_ids=[w["vb"], w["vb2"]], rated=False),
        new_match(f, kind=MatchKind.ladder, version_ids=[w["va"], w["vb"]], ladder_id=lid),
    ]
    with db.session_scope(f) as session:
        for mid in done:
            m = session.get(Match, mid)
            assert m is not None
            m.status = MatchStatus.finished
            m.started_at, m.finished_at = now - timedelta(seconds=30), now - timedelta(seconds=10)
    held = new_match(f, kind=MatchKind.challenge, version_ids=[w["vb"], w["vb2"]], rated=False)
    with db.session_scope(f) as session:
        m = session.get(Match, held)
        assert m is not None
        m.held = True
        with f() as other:
            assert workclasses.challenge_share(other, utcnow()) > 0.4
    waiting = new_match(f, kind=MatchKind.ladder, version_ids=[w["va"], w["vb"]], ladder_id=lid)
    # Ladder work waits and challenges had half the time: nothing is admitted.
    assert workclasses.release_challenges(f, settings) == []
    settings.challenge_share = 0.6
    assert workclasses.release_challenges(f, settings) == [held]
    # With no other work waiting, the slots alone decide.
    settings.challenge_share = 0.25
    with db.session_scope(f) as session:
        m = session.get(Match, waiting)
        assert m is not None
        m.status = MatchStatus.failed
    more = [
        new_match(f, kind=MatchKind.challenge, version_ids=[w["vb"], w["vb2"]], rated=False)
        for _ in range(4)
    ]
    with db.session_scope(f) as session:
        for mid in more:
            m = session.get(Match, mid)
            assert m is not None
            m.held = True
    assert workclasses.release_challenges(f, settings) == more[:3]  # 4 slots, 1 taken
