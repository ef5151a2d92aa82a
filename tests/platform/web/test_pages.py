"""The web pages over plain HTTP (no JavaScript): every page renders its data on the server.

Each test runs on SQLite and PostgreSQL (the ``api`` fixture) on a seeded arena
(``helpers.web.seed``) and compares what the HTML shows with what the JSON API says.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers.api import Api
from helpers.web import REJECTION, Node, Seeded, parse_html, seed

from cow006 import Agent, View, bots, play_match
from cow006_platform import db, results
from cow006_platform.models import MatchKind
from cow006_platform.web import plots

PAGES = ["/", "/ladders/{ladder}", "/agents/{agent}", "/leagues/{league}", "/matches/{match}"]


@pytest.fixture
def site(api: Api) -> tuple[Any, Seeded]:
    return api.client, seed(api.session_factory, matches=3)


def page(client: Any, path: str, status: int = 200) -> Node:
    r = client.get(path)
    assert r.status_code == status, r.text[:500]
    assert r.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    return parse_html(r.text)


def cells(row: Node) -> list[str]:
    return [" ".join(c.text().split()) for c in row.children if isinstance(c, Node)]


def paths(s: Seeded) -> list[str]:
    values = {
        "ladder": s.ladder_id,
        "agent": s.agent_ids[0],
        "league": s.league_id,
        "match": s.match_ids[0],
    }
    out = [p.format(**values) for p in PAGES]
    return [
        *out,
        f"/matches/{s.queued_match_id}",
        f"/matches/{s.failed_match_id}",
        "/upload",
        "/login",
        "/matches",
        f"/users/{s.alice_id}",
        "/guide",
    ]


def test_home_lists_ladders_and_leagues_with_their_state(site: tuple[Any, Seeded]) -> None:
    client, s = site
    doc = page(client, "/")
    ladder = doc.by_id("ladders").find("tr", data_ladder=str(s.ladder_id))
    assert cells(ladder)[:4] == ["main", "open", "4", "4"]
    assert ladder.find("a").get("href") == f"/ladders/{s.ladder_id}"
    league = doc.by_id("leagues").find("tr", data_league=str(s.league_id))
    assert cells(league) == ["spring", "running", "4", "1 of 3", "1 of 2"]
    assert league.find("a").get("href") == f"/leagues/{s.league_id}"
    shown = [int(r.get("data-match") or 0) for r in doc.by_id("recent-matches").find_all("tr")[1:]]
    api = client.get("/api/matches", params={"limit": 15}).json()["items"]
    assert shown == [m["id"] for m in api]


def test_ladder_page_renders_the_leaderboard(site: tuple[Any, Seeded]) -> None:
    client, s = site
    doc = page(client, f"/ladders/{s.ladder_id}")
    table = doc.by_id("leaderboard")
    assert table.get("data-refresh") == "5"
    rows = table.find("tbody").find_all("tr")
    board = client.get(f"/api/ladders/{s.ladder_id}/leaderboard").json()["items"]
    assert len(rows) == len(board) == 4
    for row, r in zip(rows, board, strict=True):
        win = "–" if r["win_rate"] is None else f"{100 * r['win_rate']:.0f}%"
        shown = cells(row)
        assert shown[0].split()[0] == str(r["rank"])  # then its change (test_results_pages)
        assert shown[1:9] == [
            r["agent"],
            r["owner"],
            f"v{r['version']}",
            f"{r['mu']:.2f}",
            f"{r['sigma']:.2f}",
            f"{r['conservative']:.2f}",
            str(r["matches"]),
            win,
        ]
        assert row.find("a").get("href") == f"/agents/{r['agent_id']}"
    assert sum(r["matches"] for r in board) == 4 * 3
    assert doc.by_id("ladder-activity").text() == "0 running, 1 queued"
    scripts = [n.get("src") or "" for n in doc.find_all("script", src=True)]
    assert any(src.startswith("/static/ladder.js?v=") for src in scripts)
    assert page(client, f"/ladders/{s.ladder_id}?refresh=1").by_id("leaderboard").get(
        "data-refresh"
    ) == ("1")
    assert page(client, f"/ladders/{s.ladder_id}?refresh=999").by_id("leaderboard").get(
        "data-refresh"
    ) == ("60")


@pytest.mark.slow
def test_agent_page_shows_versions_plot_matches_and_head_to_head(
    site: tuple[Any, Seeded],
) -> None:
    client, s = site
    alpha = s.agent_ids[0]
    r = client.get(f"/agents/{alpha}")
    assert "numpy" not in r.text  # the rejection reason is the owner's (agent.js fetches it)
    assert REJECTION.splitlines()[0] not in r.text
    doc = parse_html(r.text)
    versions = doc.by_id("versions")
    assert [
        cells(tr)[0] + " " + cells(tr)[3] for tr in versions.find_all("tr", data_version=True)
    ] == [
        "v1 rejected",
        "v2 active",
    ]
    assert "hidden" in doc.by_id("owner-tools").attrs
    # The ladder entry and its current rating, as the leaderboard has it.
    board = client.get(f"/api/ladders/{s.ladder_id}/leaderboard").json()["items"]
    mine = next(r for r in board if r["agent_id"] == alpha)
    entry = cells(doc.by_id("entries").find("tr", data_ladder=str(s.ladder_id)))
    assert entry[1].split()[0] == str(mine["rank"])
    del entry[1]
    assert entry[:7] == [
        "main",
        "v2",
        "entered",
        f"{mine['mu']:.2f}",
        f"{mine['sigma']:.2f}",
        f"{mine['conservative']:.2f}",
        str(mine["matches"]),
    ]
    # The rating history: one marker per rated match, the band, the mu line, a description.
    history = client.get(f"/api/agents/{alpha}/ratings").json()
    figure = doc.find("figure", data_ladder=str(s.ladder_id))
    svg = figure.find("svg")
    assert svg.get("role") == "img"
    assert len(svg.find_all("circle")) == history["total"] == 3
    assert svg.find_all("polygon", class_="band") and svg.find_all("polyline", class_="mu")
    assert svg.find_all("polyline", class_="conservative")
    last = history["items"][-1]
    assert f"mu {last['mu']:.2f}, sigma {last['sigma']:.2f}" in svg.find("desc").text()
    # Its results: every settled match alpha sat in, newest first (test_results_pages).
    listed = [
        int(tr.get("data-match") or 0) for tr in doc.by_id("results-matches").find_all("tr")[1:]
    ]
    api = client.get("/api/matches", params={"agent_id": alpha, "limit": 15}).json()["items"]
    assert listed == [m["id"] for m in api if m["status"] in ("finished", "failed")]
    assert set(s.match_ids) <= set(listed)
    # Head to head: the same numbers as the API's pairwise endpoint.
    rows = doc.by_id("head-to-head").find("tbody").find_all("tr")
    assert {int(tr.get("data-agent") or 0) for tr in rows} == set(s.agent_ids[1:])
    for tr in rows:
        other = int(tr.get("data-agent") or 0)
        h = client.get(f"/api/agents/{alpha}/head-to-head/{other}").json()
        assert cells(tr) == [
            s.names[other],
            str(h["matches"]),
            str(h["a_ahead"]),
            str(h["b_ahead"]),
            str(h["ties"]),
            f"{h['a_mean_score']:.1f}",
            f"{h['b_mean_score']:.1f}",
        ]


@pytest.mark.slow
def test_league_page_shows_progress_standings_and_schedule(site: tuple[Any, Seeded]) -> None:
    client, s = site
    doc = page(client, f"/leagues/{s.league_id}")
    progress = doc.by_id("league-progress")
    assert (progress.get("max"), progress.get("value")) == ("6", "1")  # 3 rounds of 2 tables
    assert "1 of 6 matches played" in doc.find("label", for_="league-progress").text()
    table = client.get(f"/api/leagues/{s.league_id}/standings").json()["standings"]
    rows = doc.by_id("standings").find("tbody").find_all("tr")
    assert [int(tr.get("data-version") or 0) for tr in rows] == [r["version_id"] for r in table]
    assert [cells(tr)[1] for tr in rows] == [r["label"] for r in table]
    assert cells(rows[0])[2:4] == [str(table[0]["matches"]), str(table[0]["wins"])]
    schedule = doc.by_id("round-1")
    assert [int(tr.get("data-match") or 0) for tr in schedule.find_all("tr")[1:]] == (
        s.league_match_ids
    )
    assert [cells(tr)[2] for tr in schedule.find_all("tr")[1:]] == ["finished", "queued"]


def check_replay_data(data: dict[str, Any], log: dict[str, Any]) -> None:
    """The viewer's steps (embedded in the page) against what the log records."""
    n = len(log["players"])
    assert data["names"] == [p["agent"] for p in log["players"]]
    assert len(data["rounds"]) == len(log["rounds"])
    totals = [0] * n
    for rnd, logged in zip(data["rounds"], log["rounds"], strict=True):
        rows = logged["rows"]
        for turn, t in zip(rnd["turns"], logged["turns"], strict=True):
            assert turn["cards"] == t["cards"]
            assert turn["order"] == sorted(range(n), key=t["cards"].__getitem__)
            assert len(turn["steps"]) == n + 1
            assert turn["steps"][0]["rows"] == rows  # the reveal: the rows before the turn
            placed = turn["steps"][1:]
            assert [s["seat"] for s in placed] == turn["order"]
            assert [s["card"] for s in placed] == sorted(t["cards"])
            takes = [
                {k: s["take"][k] for k in ("seat", "row", "cards", "reason")}
                for s in placed
                if s["take"]
            ]
            assert takes == t["takes"]
            rows = t["rows"]
            assert placed[-1]["rows"] == rows
        totals = [a + b for a, b in zip(totals, logged["penalties"], strict=True)]
        assert rnd["turns"][-1]["steps"][-1]["totals"] == totals
    assert totals == log["scores"]


@pytest.mark.slow
def test_match_page_without_javascript(site: tuple[Any, Seeded]) -> None:
    client, s = site
    match_id = s.match_ids[0]
    r = client.get(f"/matches/{match_id}")
    assert "says hello" not in r.text  # stderr is the owners' (replay.js fetches it)
    doc = parse_html(r.text)
    log = client.get(f"/api/matches/{match_id}/log").json()
    check_replay_data(json.loads(doc.by_id("match-replay").text()), log)
    assert doc.find("a", download=True).get("href") == f"/api/matches/{match_id}/log"
    # The board as served: round 1's starting rows, drawn as cards.
    viewer = doc.by_id("viewer")
    rows = [
        [int(c.get("data-card") or 0) for c in viewer.find("ol", data_row=str(i)).find_all("li")]
        for i in range(4)
    ]
    assert rows == log["rounds"][0]["rows"]
    for ident in ("controls", "narration", "revealed-section"):  # parts that need the script
        assert "hidden" in doc.by_id(ident).attrs
    # The text view: every turn's cards, takes and rows after, and the totals per round.
    totals = [0] * len(log["players"])
    for r_i, rnd in enumerate(log["rounds"], start=1):
        for t_i, turn in enumerate(rnd["turns"], start=1):
            row = cells(doc.by_id(f"text-r{r_i}t{t_i}"))
            assert row[1 : 1 + len(turn["cards"])] == [str(c) for c in turn["cards"]]
            assert row[-1] == " | ".join(" ".join(map(str, x)) for x in turn["rows"])
            assert row[-2].count(" took row ") == len(turn["takes"])
        totals = [a + b for a, b in zip(totals, rnd["penalties"], strict=True)]
    assert totals == log["scores"]
    result = doc.by_id("result").find("tbody").find_all("tr")
    assert [cells(tr)[3:5] for tr in result] == [
        [str(sc), str(rk)] for sc, rk in zip(log["scores"], log["ranks"], strict=True)
    ]


class Crashing(Agent):
    """Raises at every decision: faults, then a forfeit."""

    def play(self, view: View) -> int:
        raise RuntimeError("boom")


@pytest.mark.slow
def test_match_page_lists_faults_and_forfeits(api: Api, site: tuple[Any, Seeded]) -> None:
    client, s = site
    with db.session_scope(api.session_factory) as session:
        match_id = results.create_match(
            session, kind=MatchKind.challenge, version_ids=s.version_ids[:3], seed=5
        ).id
    agents = [Crashing(), bots.make("random"), bots.make("safe")]
    log = play_match(agents, seed=5, names=["alpha@2", "beta@1", "gamma@1"])
    with db.session_scope(api.session_factory) as session:
        assert results.finish_match(session, match_id, log, [None, None, None])
    doc = page(client, f"/matches/{match_id}")
    faults = doc.find("ul", class_="faults").find_all("li")
    assert len(faults) == len(log["faults"]) == 3
    assert " ".join(faults[0].text().split()) == (
        "alpha@2: exception in round 1, turn 1 (RuntimeError: boom)"
    )
    assert cells(doc.by_id("result").find("tr", data_seat="0"))[-1] == "3 (forfeited)"
    # Every list of matches marks the seat that faulted, with the faults' kind.
    listed = page(client, "/matches").find("tr", data_match=str(match_id))
    badges = listed.find_all("span", class_="badge-fault")
    assert [" ".join(b.text().split()) for b in badges] == ["3 faults: exception"]


def test_unfinished_and_failed_match_pages(site: tuple[Any, Seeded]) -> None:
    client, s = site
    queued = page(client, f"/matches/{s.queued_match_id}")
    assert queued.by_id("pending").get("data-status") == "queued"
    assert not queued.find_all(id="viewer")
    assert "Not played yet" in queued.by_id("pending-h").text()
    failed = page(client, f"/matches/{s.failed_match_id}")
    assert "a test said so" in failed.by_id("pending").text()
    assert failed.find("span", class_="badge").text() == "failed"


def test_upload_page_has_its_forms(site: tuple[Any, Seeded]) -> None:
    client, _ = site
    doc = page(client, "/upload")
    for ident in ("token-input", "register-name", "agent-name", "upload-agent", "upload-file"):
        assert doc.find(id=ident)
        assert doc.find("label", for_=ident).text().strip()
    assert doc.find("noscript")
    assert doc.by_id("upload-file").get("accept") == ".py,.zip"
    # The account forms post (never a GET: the token would land in the URL), with CSRF.
    for form, action in (("signin-form", "/login"), ("register-form", "/register")):
        node = doc.by_id(form)
        assert (node.get("method"), node.get("action")) == ("post", action)
        assert node.find("input", name="csrf").get("value")
    assert doc.find("a", href="/guide")
    login = page(client, "/login")
    assert login.find("h1").text() == "Sign in" and not login.find_all(id="upload-section")
    assert login.by_id("signin-form").find("input", name="page").get("value") == "login"


def _name_of(doc: Node, node: Node) -> str:
    """The accessible name of a control, as far as static HTML tells."""
    if node.get("aria-label"):
        return node.get("aria-label") or ""
    if node.get("aria-labelledby"):
        return " ".join(doc.by_id(i).text() for i in (node.get("aria-labelledby") or "").split())
    if node.get("id") and doc.find_all("label", for_=node.get("id") or ""):
        return doc.find("label", for_=node.get("id") or "").text()
    parent = node.parent
    while parent is not None:
        if parent.tag == "label":
            return parent.text()
        parent = parent.parent
    return node.text()


@pytest.mark.slow
def test_every_control_has_an_accessible_name(site: tuple[Any, Seeded]) -> None:
    client, s = site
    for path in paths(s):
        doc = page(client, path)
        assert doc.find("html").get("lang") == "en"
        assert len(doc.find_all("h1")) == 1, path
        assert doc.find_all("main") and doc.find("nav").get("aria-label")
        for node in doc.iter():
            control = node.tag in ("button", "select", "textarea", "a") or (
                node.tag == "input" and node.get("type") != "hidden"
            )
            labelled = node.get("role") in ("region", "img", "toolbar") or node.tag == "section"
            if control or (labelled and (node.get("aria-labelledby") or node.get("aria-label"))):
                assert _name_of(doc, node).strip(), f"{path}: unnamed <{node.tag} {node.attrs}>"
            if node.get("role") == "region":
                assert node.get("aria-labelledby") or node.get("aria-label"), path


@pytest.mark.slow
def test_missing_things_are_html_404_pages(site: tuple[Any, Seeded]) -> None:
    client, _ = site
    for path in (
        "/ladders/999999",
        "/agents/abc",
        "/leagues/0",
        "/matches/99999999999999",
        "/agents/-1",
    ):
        doc = page(client, path, 404)
        assert "no such" in doc.find("p", class_="error-detail").text().lower()


@pytest.mark.slow
def test_static_files(site: tuple[Any, Seeded]) -> None:
    client, s = site
    seen = set()
    for path in paths(s):
        doc = page(client, path)
        refs = [n.get("src") for n in doc.find_all("script", src=True)]
        refs += [n.get("href") for n in doc.find_all("link", rel="stylesheet")]
        seen.update(str(r) for r in refs)
    assert {r.split("?")[0] for r in seen} == {
        "/static/app.js",
        "/static/app.css",
        "/static/ladder.js",
        "/static/agent.js",
        "/static/league.js",
        "/static/replay.js",
        "/static/upload.js",
        "/static/account.js",
    }
    for ref in seen:
        r = client.get(ref)
        assert r.status_code == 200
        kind = "text/css" if ref.split("?")[0].endswith(".css") else "text/javascript"
        assert r.headers["content-type"].startswith(kind)
    for bad in ("/static/nope.js", "/static/routes.py", "/static/..%2Froutes.py", "/static/.x.js"):
        assert client.get(bad).status_code == 404


@pytest.mark.slow
def test_pages_stay_out_of_the_api_schema(site: tuple[Any, Seeded]) -> None:
    client, _ = site
    schema = client.get("/openapi.json").json()
    assert all(p.startswith("/api/") for p in schema["paths"])


def test_rating_plot_svg() -> None:
    assert plots.rating_history_svg([], "t", "p") == ""
    one = plots.rating_history_svg([plots.RatingPoint(1, 1, 25.0, 8.3)], "One <match>", "p1")
    assert "One &lt;match&gt;" in one and "<circle" in one and "<polyline" not in one
    points = [plots.RatingPoint(i, 1 if i < 5 else 2, 25 + i / 3, 8 - i / 2) for i in range(10)]
    svg = parse_html(str(plots.rating_history_svg(points, "Ten", "p10"))).find("svg")
    assert len(svg.find_all("circle")) == 10
    assert len(svg.find_all("line", class_="version-change")) == 1
    assert svg.get("aria-labelledby") == "p10-title p10-desc"
    assert plots.nice_step(23.0) == 5 and plots.nice_step(0.7) == 0.2


def test_matches_user_and_ladders_pages(site: tuple[Any, Seeded]) -> None:
    client, s = site
    doc = page(client, "/matches")
    shown = [int(r.get("data-match") or 0) for r in doc.by_id("matches").find_all("tr")[1:]]
    api = client.get("/api/matches", params={"limit": 50}).json()
    assert shown == [m["id"] for m in api["items"]] and len(shown) == min(50, api["total"])
    doc = page(client, f"/users/{s.alice_id}")
    assert doc.find("h1").text() == "alice"
    rows = doc.by_id("user-agents").find_all("tr", data_agent=True)
    mine = client.get("/api/agents", params={"owner_id": s.alice_id}).json()["items"]
    assert [int(r.get("data-agent") or 0) for r in rows] == [a["id"] for a in mine]
    assert [cells(r)[0] for r in rows] == ["alpha", "beta"]
    # The agent page links its owner's page.
    agent = page(client, f"/agents/{s.agent_ids[0]}")
    assert agent.find("a", href=f"/users/{s.alice_id}")
    r = client.get("/ladders", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/#ladders"
    for missing in ("/users/999999", "/users/x", "/users/0"):
        assert (
            "no such user"
            in page(client, missing, 404).find("p", class_="error-detail").text().lower()
        )
