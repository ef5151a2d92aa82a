"""The author's journey on the pages: a pending version's place in the validation queue, its
kept validation match, and challenges sent from an agent's page (``web.challenge``).

Versions stay pending here (the recording executor validates nothing) until a test gives
them a verdict as the workers would: ``results.store_validation`` keeps the match.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.api import Api, RecordingExecutor
from helpers.web import parse_html

from cow006 import bots, play_match
from cow006_platform import db, models, results


@pytest.fixture
def executor() -> RecordingExecutor:
    return RecordingExecutor(activate=False)


def sign_in(client: Any, headers: dict[str, str]) -> None:
    """Sign in with the /login form (as a browser without scripts does): the session cookie."""
    doc = parse_html(client.get("/login").text)
    csrf = doc.by_id("signin-form").find("input", name="csrf").get("value") or ""
    token = headers["Authorization"].removeprefix("Bearer ")
    r = client.post(
        "/login", data={"csrf": csrf, "token": token, "next": "/"}, follow_redirects=False
    )
    assert r.status_code == 303, r.text[:300]


def page_csrf(client: Any, path: str) -> str:
    """The CSRF field of the signed-in user's forms (the header's sign-out form has it)."""
    doc = parse_html(client.get(path).text)
    return doc.find("form", class_="sign-out-form").find("input", name="csrf").get("value") or ""


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
