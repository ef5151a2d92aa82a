"""/admin: the admins' pages that create and run ladders and leagues, as plain CSRF-checked
forms making the API's admin calls; everybody else is refused."""

from __future__ import annotations

from typing import Any

from helpers.api import Api
from helpers.web import parse_html, sign_in
from helpers.web import signed_in_csrf as page_csrf


def test_only_admins_get_the_admin_pages(api: Api) -> None:
    anonymous = api.client.get("/admin", follow_redirects=False)
    assert anonymous.status_code == 303
    assert anonymous.headers["location"] == "/login?next=/admin"
    assert api.client.post("/admin/ladders", data={"name": "x"}).status_code == 403
    sign_in(api.client, api.user("mallory"))
    page = api.client.get("/admin")
    assert page.status_code == 403 and "<html" in page.text.lower()
    assert "for the arena&#39;s admins" in page.text
    assert 'href="/admin"' not in page.text  # the header links it for admins only
    csrf = page_csrf(api.client, "/me")
    for path, data in [
        ("/admin/ladders", {"name": "mine"}),
        ("/admin/ladders/1/state", {"state": "closed"}),
        ("/admin/leagues", {"name": "mine", "entrants": "a@1 b@1"}),
        ("/admin/leagues/1/start", {}),
    ]:
        refused = api.client.post(path, data={"csrf": csrf, **data})
        assert refused.status_code == 403, path
    assert api.client.get("/api/ladders").json()["total"] == 0


def admin_session(api: Api) -> tuple[dict[str, str], str]:
    admin = api.user("root", admin=True)
    sign_in(api.client, admin)
    page = api.client.get("/admin")
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    assert 'href="/admin"' in page.text
    csrf = parse_html(page.text).by_id("ladder-form").find("input", name="csrf").get("value")
    return admin, csrf or ""


def test_an_admin_creates_and_runs_a_ladder(api: Api) -> None:
    _, csrf = admin_session(api)
    post = api.client.post
    fields = {"name": "main", "players": "3", "decision_time": "0.5", "time_bank": ""}
    forged = post("/admin/ladders", data=fields)  # no CSRF field
    assert forged.status_code == 403
    made = post(
        "/admin/ladders",
        data={"csrf": csrf, **fields, "allow_same_owner": "on"},
        follow_redirects=False,
    )
    assert made.status_code == 303, made.text[:400]
    (ladder,) = api.client.get("/api/ladders").json()["items"]
    assert made.headers["location"] == f"/admin#ladder-{ladder['id']}"
    assert (ladder["name"], ladder["players"], ladder["decision_time"]) == ("main", 3, 0.5)
    assert ladder["time_bank"] == 10.0 and ladder["allow_same_owner"] is True  # blank: default
    lid = ladder["id"]
    doc = parse_html(api.client.get("/admin").text)
    assert doc.by_id(f"ladder-{lid}").find("option", selected=True).get("value") == "open"

    paused = post(f"/admin/ladders/{lid}/state", data={"csrf": csrf, "state": "paused"})
    assert paused.status_code == 200  # followed back to /admin
    assert api.client.get(f"/api/ladders/{lid}").json()["state"] == "paused"
    bad = post(f"/admin/ladders/{lid}/state", data={"csrf": csrf, "state": "<b>gone</b>"})
    assert bad.status_code == 400 and "<b>gone" not in bad.text
    assert post("/admin/ladders/999/state", data={"csrf": csrf, "state": "open"}).status_code == 404

    # The schema's checks, as one sentence naming the field (never the input).
    taken = post("/admin/ladders", data={"csrf": csrf, "name": "main"})
    assert taken.status_code == 409 and "taken" in taken.text
    hostile = "<script>alert(1)</script>"
    refused = post("/admin/ladders", data={"csrf": csrf, "name": hostile})
    assert refused.status_code == 400 and "name: 2 to 60 letters" in refused.text.lower()
    assert "<script>alert" not in refused.text and "alert(1)" not in refused.text
    many = post("/admin/ladders", data={"csrf": csrf, "name": "big", "players": "11"})
    assert many.status_code == 400 and "players:" in many.text.lower()
    junk = post("/admin/ladders", data={"csrf": csrf, "name": "junk", "time_bank": "1e999x"})
    assert junk.status_code == 400 and "time_bank:" in junk.text.lower()
    assert api.client.get("/api/ladders").json()["total"] == 1


def test_an_admin_creates_and_starts_a_league(api: Api) -> None:
    admin, csrf = admin_session(api)
    post = api.client.post
    lid = api.ladder(admin, "main", players=2)
    entrants = [api.entrant(lid) for _ in range(3)]
    labels = [api.client.get(f"/api/agents/{a}").json()["name"] + "@1" for a, _ in entrants]

    listed = post(
        "/admin/leagues",
        data={"csrf": csrf, "name": "spring", "entrants": ", ".join(labels), "table_size": "2"},
        follow_redirects=False,
    )
    assert listed.status_code == 303, listed.text[:400]
    from_ladder = post(
        "/admin/leagues",
        data={"csrf": csrf, "name": "summer", "from_ladder": str(lid), "table_size": "3"},
        follow_redirects=False,
    )
    assert from_ladder.status_code == 303, from_ladder.text[:400]
    leagues = {lg["name"]: lg for lg in api.client.get("/api/leagues").json()["items"]}
    assert sorted(e["version_id"] for e in leagues["spring"]["entrants"]) == sorted(
        v for _, v in entrants
    )
    assert len(leagues["summer"]["entrants"]) == 3 and leagues["summer"]["table_size"] == 3

    spring = leagues["spring"]["id"]
    doc = parse_html(api.client.get("/admin").text)
    assert doc.by_id(f"league-{spring}").find("form", class_="start-form")
    started = post(f"/admin/leagues/{spring}/start", data={"csrf": csrf}, follow_redirects=False)
    assert started.status_code == 303
    assert api.client.get(f"/api/leagues/{spring}").json()["state"] == "running"
    assert api.executor.matches  # handed to the workers
    again = post(f"/admin/leagues/{spring}/start", data={"csrf": csrf})
    assert again.status_code == 409 and "already" in again.text.lower()

    def refused(**data: Any) -> Any:
        return post("/admin/leagues", data={"csrf": csrf, "name": "autumn", **data})

    unknown = refused(entrants=f"{labels[0]} <i>nobody</i>@1")
    assert unknown.status_code == 404 and "no version is labelled" in unknown.text.lower()
    assert "<i>nobody" not in unknown.text
    assert refused().status_code == 400  # no entrants at all
    few = refused(entrants=labels[0], table_size="2")
    assert few.status_code == 400 and "entrants" in few.text.lower()
    twice = refused(entrants=f"{labels[0]} {labels[0]}")
    assert twice.status_code == 400 and "twice" in twice.text.lower()
    assert refused(from_ladder="x" * 300).status_code == 404
    assert len(api.client.get("/api/leagues").json()["items"]) == 2
