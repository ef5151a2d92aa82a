"""/play and /play/{id}: choosing opponents, the table's forms, hostile forms, the JSON state.

Signed in with the session cookie (the /login form). The worker's side is stood in for by
writing the decision to the ``plays`` row as ``HumanSeat`` does (tests/workers/test_human.py
plays whole matches; test_play_browser.py plays one in Chromium with the keyboard).
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.api import Api
from helpers.plays import ask
from helpers.web import parse_html, sign_in
from sqlalchemy import select

from cow006_platform import db
from cow006_platform.models import Match, MatchKind, MatchStatus, Play


def _csrf(text: str, form: str) -> str:
    return parse_html(text).by_id(form).find("input", name="csrf").get("value") or ""


def _start(api: Api, **fields: str) -> Any:
    page = api.client.get("/play")
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    data = {"csrf": _csrf(page.text, "play-form"), **fields}
    return api.client.post("/play", data=data, follow_redirects=False)


def test_a_visitor_is_asked_to_sign_in(api: Api) -> None:
    r = api.client.get("/play", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/play"
    assert api.client.get("/play/1", follow_redirects=False).status_code == 303
    assert api.client.get("/play/1/state").status_code == 401


def test_a_person_starts_a_match_and_answers_with_the_forms(api: Api) -> None:
    alice = api.user("alice")
    bob = api.user("bob")
    public = api.upload(bob, api.agent(bob, "bee"))["id"]
    sign_in(api.client, alice)
    page = api.client.get("/play")
    doc = parse_html(page.text)
    assert doc.by_id("op-builtin-greedy") is not None and doc.by_id(f"op-{public}") is not None
    r = _start(api, **{"op_builtin:greedy": "on", "op_builtin:safe": "on"})
    assert r.status_code == 303 and r.headers["location"].startswith("/play/")
    url = r.headers["location"]
    pid = int(url.rsplit("/", 1)[1])
    with db.session_scope(api.session_factory) as s:
        play = s.get(Play, pid)
        assert play is not None
        match = s.get(Match, play.match_id)
        assert match is not None and match.kind is MatchKind.play
        match_id = match.id
    assert api.executor.matches == [match_id]
    table = api.client.get(url)
    assert table.status_code == 200 and "about to start" in table.text
    assert 'http-equiv="refresh"' in table.text  # the no-script reload while waiting
    # The start page says a match is going on, and a second one is refused.
    assert 'id="going"' in api.client.get("/play").text
    again = _start(api, **{"op_builtin:random": "on"})
    assert again.status_code == 429 and "finish it" in again.text

    number = ask(api.session_factory, pid, "card", [7, 55, 99])
    table = api.client.get(url)
    form = parse_html(table.text).by_id("move-form")
    buttons = form.find_all("button")
    assert [b.get("value") for b in buttons] == ["7", "55", "99"]
    assert "autofocus" in buttons[0].attrs
    assert api.client.get(f"{url}/state").json() == {
        "decision": number,
        "asked": "card",
        "status": "running",
    }
    csrf = _csrf(table.text, "move-form")
    # No token: refused, nothing stored.
    r = api.client.post(f"{url}/move", data={"card": "55"}, follow_redirects=False)
    assert r.status_code == 403
    r = api.client.post(
        f"{url}/move",
        data={"csrf": csrf, "card": "55", "decision": str(number)},
        follow_redirects=False,
    )
    assert r.status_code == 303 and r.headers["location"] == url
    with db.session_scope(api.session_factory) as s:
        stored = s.get(Play, pid)
        assert stored is not None and stored.answer == 55
    # A second press of the same decision is no error: the table shows where things are.
    r = api.client.post(f"{url}/move", data={"csrf": csrf, "card": "7"}, follow_redirects=False)
    assert r.status_code == 303

    ask(api.session_factory, pid, "row", [7, 99])
    table = api.client.get(url)
    rows = parse_html(table.text).by_id("move-form").find_all("button")
    assert [b.get("value") for b in rows] == ["1", "2", "3", "4"]
    r = api.client.post(f"{url}/move", data={"csrf": csrf, "row": "3"}, follow_redirects=False)
    assert r.status_code == 303
    with db.session_scope(api.session_factory) as s:
        stored = s.get(Play, pid)
        assert stored is not None and stored.answer == 2  # rows are 1..4 on the page

    with db.session_scope(api.session_factory) as s:
        match = s.get(Match, match_id)
        assert match is not None
        match.status = MatchStatus.finished
        match.scores = [66, 10, 20]
        match.ranks = [3, 1, 2]
    done = api.client.get(url)
    assert parse_html(done.text).by_id("replay-link").get("href") == f"/matches/{match_id}"


@pytest.mark.parametrize(
    "fields",
    [{}, {"op_builtin:nosuch": "on"}, {"op_builtin:<script>alert(1)</script>": "on"},
     {"op_0": "on"}, {"op_99999999999": "on"}, {"op_builtin:random": "on", "players": "1"},
     {f"op_builtin:random{'x' * 5000}": "on"}],
)  # fmt: skip
def test_hostile_start_forms_are_an_error_page_with_a_sentence(
    api: Api, fields: dict[str, str]
) -> None:
    sign_in(api.client, api.user("alice"))
    r = _start(api, **fields)
    assert r.status_code in (400, 404), r.text[:300]
    assert "text/html" in r.headers["content-type"]
    assert "<script>alert" not in r.text
    assert select(Play) is not None
    with db.session_scope(api.session_factory) as s:
        assert s.scalars(select(Play)).all() == []


@pytest.mark.parametrize(
    "fields",
    [{"card": "0"}, {"card": "-5"}, {"card": "1e3"}, {"card": "12", "row": "1"}, {"row": "5"},
     {"card": "٣"}, {"card": "9" * 500}, {}],
)  # fmt: skip
def test_hostile_moves_are_refused_and_store_nothing(api: Api, fields: dict[str, str]) -> None:
    alice = api.user("alice")
    sign_in(api.client, alice)
    url = _start(api, **{"op_builtin:random": "on"}).headers["location"]
    pid = int(url.rsplit("/", 1)[1])
    ask(api.session_factory, pid, "card", [12, 40])
    csrf = _csrf(api.client.get(url).text, "move-form")
    r = api.client.post(f"{url}/move", data={"csrf": csrf, **fields}, follow_redirects=False)
    assert r.status_code == 400 and "text/html" in r.headers["content-type"]
    with db.session_scope(api.session_factory) as s:
        play = s.get(Play, pid)
        assert play is not None and play.answer is None


def test_another_users_table_is_a_404_page(api: Api) -> None:
    alice = api.user("alice")
    sign_in(api.client, alice)
    url = _start(api, **{"op_builtin:random": "on"}).headers["location"]
    api.client.post("/logout", data={"csrf": _csrf(api.client.get("/play").text, "play-form")})
    sign_in(api.client, api.user("mallory"))
    assert api.client.get(url).status_code == 404
    assert api.client.get(f"{url}/state").status_code == 404
    for bad in ("/play/0", "/play/abc", "/play/99999999999"):
        assert api.client.get(bad).status_code == 404
