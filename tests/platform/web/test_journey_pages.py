"""The author's journey on the pages: a pending version's place in the validation queue, its
kept validation match, and challenges sent from an agent's page (``web.challenge``).

Versions stay pending here (the recording executor validates nothing) until a test gives
them a verdict as the workers would: ``results.store_validation`` keeps the match.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.api import Api, RecordingExecutor
from helpers.web import parse_html, sign_in
from helpers.web import signed_in_csrf as page_csrf

from cow006 import bots, play_match
from cow006_platform import db, models, results


@pytest.fixture
def executor() -> RecordingExecutor:
    return RecordingExecutor(activate=False)


def validated(api: Api, version_id: int, *, seat: int = 1, players: int = 3) -> int:
    """Give a pending version its verdict (active) and keep a played match as its
    validation match, as the workers' validation does; the match's id."""
    log = play_match([bots.make("random") for _ in range(players)], seed=7)
    with db.session_scope(api.session_factory) as session:
        version = session.get(models.AgentVersion, version_id)
        assert version is not None
        version.status = models.VersionStatus.active
        version.validated_at = models.utcnow()
        stderr = "<script>alert(1)</script> from the bot"
        match = results.store_validation(session, version, seat, log, stderr, models.utcnow())
        return match.id


def test_a_pending_version_shows_its_place_in_the_validation_queue(api: Api) -> None:
    alice = api.user("alice")
    bob = api.user("bob")
    ant = api.agent(alice, "ant")
    bee = api.agent(bob, "bee")
    first = api.upload(bob, bee)  # uploaded earlier: ahead in the queue
    second = api.upload(alice, ant)
    third = api.upload(alice, ant)
    assert first["queue_place"] == 1 and second["queue_place"] == 2
    assert third["queue_place"] == 3 and third["queue_seconds"] >= 3
    versions = api.client.get(f"/api/agents/{ant}/versions").json()["items"]
    assert [v["queue_place"] for v in versions] == [2, 3]
    assert all(v["validation_match_id"] is None for v in versions)

    # The agent page says it without JavaScript (a reload shows the news).
    doc = parse_html(api.client.get(f"/agents/{ant}").text)
    rows = doc.by_id("versions").find_all("tr", **{"data-version": True})
    assert [r.find("span", class_="queue-place").text().strip() for r in rows] == [
        "2nd in line, about 20 s",
        "3rd in line, about 30 s",
    ]
    # bee's verdict moves both up one place.
    validated(api, int(first["id"]))
    one = api.client.get(f"/api/agents/{ant}/versions/1").json()
    assert one["queue_place"] == 1 and one["queue_seconds"] >= 1
    assert api.client.get(f"/api/agents/{bee}/versions/1").json()["queue_place"] is None


def test_the_validation_match_is_kept_and_watched_as_a_replay(api: Api) -> None:
    alice = api.user("alice")
    ant = api.agent(alice, "ant")
    version = api.upload(alice, ant)
    match_id = validated(api, int(version["id"]), seat=1)
    out = api.client.get(f"/api/agents/{ant}/versions/1").json()
    assert out["status"] == "active" and out["validation_match_id"] == match_id
    assert out["queue_place"] is None
    doc = parse_html(api.client.get(f"/agents/{ant}").text)
    link = doc.by_id("versions").find("a", class_="validation-match")
    assert link.get("href") == f"/matches/{match_id}"
    assert link.text() == "watch its validation match"
    # Its results count the log's three players, not the one seat kept.
    row = doc.by_id("results-matches").find("tr", **{"data-match": str(match_id)})
    assert "of 3" in row.find("td", class_="place").text()

    match = api.client.get(f"/api/matches/{match_id}").json()
    assert match["kind"] == "validation" and match["rated"] is False
    assert [p["seat"] for p in match["participants"]] == [1]
    page = api.client.get(f"/matches/{match_id}")
    assert page.status_code == 200
    replay = parse_html(page.text)
    players = replay.by_id("players").find_all("tr", **{"data-seat": True})
    assert len(players) == 3
    # Only seat 1 is an agent of the arena (the others are the built-ins): one link, its own.
    links = [p.find_all("a") for p in players]
    assert [len(found) for found in links] == [0, 1, 0]
    assert links[1][0].get("href") == f"/agents/{ant}"
    assert "validation" in replay.find("p", class_="match-context").text()
    # The seat's stderr (the bot's text) is its owner's, as in any match.
    assert api.client.get(f"/api/matches/{match_id}/seats/1/stderr").status_code == 401
    stderr = api.client.get(f"/api/matches/{match_id}/seats/1/stderr", headers=alice).json()
    assert stderr["stderr"].startswith("<script>")
    assert "<script>alert" not in page.text
    # Unrated: no rating anywhere, and the ladders' pages never list it.
    with api.session_factory() as session:
        assert session.query(models.Rating).count() == 0


def active_agent(api: Api, owner: dict[str, str], name: str) -> int:
    """An agent of ``owner`` named ``name`` with one version that passed validation."""
    agent = api.agent(owner, name)
    validated(api, int(api.upload(owner, agent)["id"]))
    return agent


def test_an_owner_challenges_opponents_by_name_from_the_agent_page(api: Api) -> None:
    alice = api.user("alice")
    ant = active_agent(api, alice, "ant")
    active_agent(api, api.user("bob"), "bee")
    active_agent(api, api.user("carol"), "cow")
    visitor = parse_html(api.client.get(f"/agents/{ant}").text)
    assert not visitor.find_all(id="challenge-form")  # only its owner gets the form

    sign_in(api.client, alice)
    doc = parse_html(api.client.get(f"/agents/{ant}").text)
    form = doc.by_id("challenge-form")
    assert form.get("action") == f"/agents/{ant}/challenge"
    suggested = [o.get("value") for o in doc.by_id("challenge-agents").find_all("option")]
    assert sorted(suggested) == ["bee", "cow"]  # not the agent itself
    csrf = form.find("input", name="csrf").get("value") or ""
    post = api.client.post
    ok = post(
        f"/agents/{ant}/challenge",
        data={"csrf": csrf, "opponent1": "bee", "opponent2": " cow "},
        follow_redirects=False,
    )
    assert ok.status_code == 303, ok.text[:300]
    match_id = int(ok.headers["location"].removeprefix("/matches/"))
    match = api.client.get(f"/api/matches/{match_id}").json()
    assert match["kind"] == "challenge" and match["status"] == "queued" and not match["rated"]
    assert [p["agent"] for p in match["participants"]] == ["ant", "bee", "cow"]
    assert match_id in api.executor.matches  # admitted to the challenge queue at once
    page = api.client.get(ok.headers["location"])
    assert page.status_code == 200 and "Challenge match" in page.text


def test_challenge_refusals_are_one_sentence_error_pages(api: Api, settings: Any) -> None:
    alice = api.user("alice")
    ant = active_agent(api, alice, "ant")
    bee = active_agent(api, api.user("bob"), "bee")
    post = api.client.post
    # Not signed in: no CSRF, refused; a forged form from a signed-in browser too.
    assert post(f"/agents/{ant}/challenge", data={"opponent1": "bee"}).status_code == 403
    sign_in(api.client, alice)
    forged = post(f"/agents/{ant}/challenge", data={"opponent1": "bee"})
    assert forged.status_code == 403 and "<html" in forged.text.lower()
    csrf = page_csrf(api.client, f"/agents/{ant}")

    def challenge(agent: int, **names: str) -> Any:
        return post(f"/agents/{agent}/challenge", data={"csrf": csrf, **names})

    hostile = '<img src=x onerror="alert(1)">\x00\u202e' + "é" * 1000
    unknown = challenge(ant, opponent1=hostile)
    assert unknown.status_code == 404 and "no agent is named" in unknown.text.lower()
    assert "<img" not in unknown.text and "&lt;img src=x" in unknown.text
    assert "\x00" not in unknown.text and "é" * 100 not in unknown.text  # bounded
    huge = challenge(ant, opponent1="é" * 6000)  # past the form's field size
    assert huge.status_code == 400 and "could not be read" in huge.text.lower()
    assert challenge(ant, opponent1="é" * 500_000).status_code == 413  # past a body's size
    by_id = challenge(ant, opponent1=str(bee))  # names, never ids
    assert by_id.status_code == 404 and f"no agent is named {bee}" in by_id.text.lower()
    twice = challenge(ant, opponent1="bee", opponent2="bee")
    assert twice.status_code == 400 and "named twice" in twice.text.lower()
    itself = challenge(ant, opponent1="ant")
    assert itself.status_code == 400
    assert challenge(ant).status_code == 400  # nobody named
    # Someone else's agent: its owner challenges with it, nobody else.
    theirs = challenge(bee, opponent1="ant")
    assert theirs.status_code == 403 and "only its owner" in theirs.text.lower()
    assert challenge(999, opponent1="bee").status_code == 404
    # An opponent who refuses challenges: the API's own refusal, as a page.
    bob_agent = api.client.get(f"/api/agents/{bee}").json()
    assert bob_agent["accepts_challenges"]
    with db.session_scope(api.session_factory) as session:
        row = session.get(models.Agent, bee)
        assert row is not None
        row.accepts_challenges = False
    refused = challenge(ant, opponent1="bee")
    assert refused.status_code == 403 and "does not accept challenges" in refused.text
    assert not api.executor.matches  # nothing was queued


def test_the_caps_on_challenges_hold_on_the_pages(api: Api) -> None:
    alice = api.user("alice")
    ant = active_agent(api, alice, "ant")
    active_agent(api, alice, "ant2")
    sign_in(api.client, alice)
    csrf = page_csrf(api.client, f"/agents/{ant}")
    answers = [
        api.client.post(
            f"/agents/{ant}/challenge",
            data={"csrf": csrf, "opponent1": "ant2"},
            follow_redirects=False,
        ).status_code
        for _ in range(6)
    ]
    assert answers[0] == 303 and answers[-1] == 429
    last = api.client.post(f"/agents/{ant}/challenge", data={"csrf": csrf, "opponent1": "ant2"})
    assert last.status_code == 429 and last.headers.get("retry-after")


def test_the_upload_page_lists_the_signed_in_users_latest_uploads(api: Api) -> None:
    alice = api.user("alice")
    ant = api.agent(alice, "ant")
    first = api.upload(alice, ant)
    api.upload(alice, ant)
    bee = api.agent(api.user("bob"), "bee")
    assert not parse_html(api.client.get("/upload").text).find_all(id="uploads")
    match_id = validated(api, int(first["id"]))
    sign_in(api.client, alice)
    page = api.client.get("/upload")
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    rows = parse_html(page.text).by_id("uploads").find_all("tr", **{"data-version-id": True})
    assert [r.find("a").text() for r in rows] == ["ant@2", "ant@1"]  # newest first
    assert rows[0].find("span", class_="queue-place").text().strip().startswith("1st in line")
    assert rows[1].find("a", class_="validation-match").get("href") == f"/matches/{match_id}"
    assert f"/agents/{bee}" not in page.text  # only the user's own
