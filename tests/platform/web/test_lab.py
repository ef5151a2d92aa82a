"""/evaluations and /evaluations/{id}: the owner's runs and their figures, as pages.

Signed in with the session cookie (the /login form, as a browser without scripts posts it);
anyone else gets a 404 page for a run, a visitor is asked to sign in.
"""

from __future__ import annotations

from helpers.api import Api, play_and_finish
from helpers.web import parse_html, sign_in
from sqlalchemy import select

from cow006_platform import models


def test_an_owner_reads_a_run_and_its_figures(api: Api) -> None:
    admin = api.user(admin=True)
    lid = api.ladder(admin, players=2)
    opponent = api.entrant(lid)[1]
    alice = api.user("alice")
    agent = api.agent(alice, "ant")
    a, b = (int(api.upload(alice, agent)["id"]) for _ in range(2))
    body = {"version_id": b, "baseline_id": a, "pool": [opponent], "players": 2, "matches": 4}
    run = api.client.post("/api/evaluations", json=body, headers=alice).json()
    with api.session_factory() as session:
        ids = session.scalars(
            select(models.Match.id).where(models.Match.evaluation_id == run["id"])
        ).all()
    for match_id in ids:
        play_and_finish(api.session_factory, match_id)

    anonymous = api.client.get(f"/evaluations/{run['id']}", follow_redirects=False)
    assert anonymous.status_code == 303
    assert anonymous.headers["location"] == f"/login?next=/evaluations/{run['id']}"

    assert api.client.get("/me", follow_redirects=False).headers["location"] == "/login?next=/me"
    sign_in(api.client, alice)
    mine = api.client.get("/me")  # "My agents": the user's own page
    assert mine.status_code == 200 and "ant" in parse_html(mine.text).by_id("user-agents").text()
    assert 'href="/evaluations"' in mine.text
    listed = api.client.get("/evaluations")
    assert listed.status_code == 200 and listed.headers["cache-control"] == "no-store"
    rows = parse_html(listed.text).by_id("runs").find_all("tr", **{"data-run": True})
    assert [row.get("data-run") for row in rows] == [str(run["id"])]
    page = api.client.get(f"/evaluations/{run['id']}")
    assert page.status_code == 200
    doc = parse_html(page.text)
    figures = doc.by_id("subjects").text()
    assert "ant@2" in figures and "ant@1" in figures
    comparison = doc.by_id("comparison-table").text()
    assert "Paired" in comparison and "Heads per round" in comparison
    assert api.client.get("/evaluations/999").status_code == 404
    assert api.client.get("/evaluations/x").status_code == 404

    # Another signed-in user: the run does not exist for them.
    api.client.cookies.clear()
    sign_in(api.client, api.user("mallory"))
    other = api.client.get(f"/evaluations/{run['id']}")
    assert other.status_code == 404 and "<html" in other.text.lower()


def test_an_owner_enters_a_ladder_from_the_agent_page(api: Api) -> None:
    admin = api.user(admin=True)
    lid = api.ladder(admin, "open-one", players=2)
    alice = api.user("alice")
    agent = api.agent(alice, "ant")
    version = int(api.upload(alice, agent)["id"])
    visitor = parse_html(api.client.get(f"/agents/{agent}").text)
    assert not visitor.find_all(id="enter-form")  # only its owner gets the form

    sign_in(api.client, alice)
    doc = parse_html(api.client.get(f"/agents/{agent}").text)
    form = doc.by_id("enter-form")
    csrf = form.find("input", name="csrf").get("value") or ""
    assert form.find("option", value=str(lid)) and form.find("option", value=str(version))
    post = api.client.post
    forged = post(f"/agents/{agent}/enter", data={"ladder_id": lid, "version_id": version})
    assert forged.status_code == 403 and "<html" in forged.text.lower()  # no CSRF field
    ok = post(
        f"/agents/{agent}/enter",
        data={"csrf": csrf, "ladder_id": lid, "version_id": version},
        follow_redirects=False,
    )
    assert ok.status_code == 303 and ok.headers["location"] == f"/agents/{agent}#ladders"
    entries = api.client.get(f"/api/ladders/{lid}/entries").json()["items"]
    assert [(e["agent_id"], e["version_id"]) for e in entries] == [(agent, version)]
    # What the ladder refuses is an error page saying why; junk ids are a 404 page.
    bad = post(
        f"/agents/{agent}/enter", data={"csrf": csrf, "ladder_id": "999", "version_id": version}
    )
    assert bad.status_code == 404 and "no such ladder" in bad.text.lower()
    junk = post(
        f"/agents/{agent}/enter", data={"csrf": csrf, "ladder_id": "x" * 5000, "version_id": "1"}
    )
    assert junk.status_code == 404

    # Someone else's agent: refused by the ladder's own rule (owner only).
    api.client.cookies.clear()
    mallory = api.user("mallory")
    sign_in(api.client, mallory)
    page = parse_html(api.client.get(f"/agents/{agent}").text)
    assert not page.find_all(id="enter-form")
    token = parse_html(api.client.get("/me", follow_redirects=True).text)
    their_csrf = token.find("form", class_="sign-out-form").find("input", name="csrf").get("value")
    stolen = post(
        f"/agents/{agent}/enter",
        data={"csrf": their_csrf or "", "ladder_id": lid, "version_id": version},
    )
    assert stolen.status_code == 403
