"""Results centred on the reader (issue 17), over plain HTTP (no JavaScript).

The agent page lists the agent's own results (its place, heads, the change of its μ − 3σ and
its faults in each settled match, newest first; queued and running ones in one line) and its
rank in each ladder; the leaderboard shows the rank change, heads per round, fault rate and
last played, and highlights the signed-in owner's agents on the page rendered for the session
only.  Each figure is checked against a computation of its own from the API's matches, logs
and rating history on a seeded arena (``helpers.web.seed``), on SQLite and PostgreSQL.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import pytest
from helpers.api import Api
from helpers.web import Node, Seeded, parse_html, seed

from cow006 import Agent, View, bots, play_match
from cow006_platform import db, results
from cow006_platform.models import MatchKind
from cow006_platform.web.routes import STATIC, ordinal, signed, when


class Faulty(Agent):
    """Plays a card it does not hold: a fault every turn (the host plays for it)."""

    def play(self, view: View) -> int:
        return 999


@pytest.fixture
def site(api: Api) -> tuple[Any, Seeded]:
    return api.client, seed(api.session_factory, matches=4)


def page(client: Any, path: str) -> Node:
    r = client.get(path)
    assert r.status_code == 200, r.text[:500]
    return parse_html(r.text)


def cells(row: Node) -> list[str]:
    return [" ".join(c.text().split()) for c in row.children if isinstance(c, Node)]


def all_items(client: Any, path: str, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        body = client.get(path, params={**params, "limit": 200, "offset": len(items)}).json()
        items += body["items"]
        if len(items) >= body["total"]:
            return items


def conservative(mu: float, sigma: float) -> float:
    return mu - 3 * sigma


def rating_steps(client: Any, agent_id: int, ladder: dict[str, Any]) -> dict[int, float]:
    """Per match, how much it moved the agent's μ − 3σ: its rating history's steps (the
    ladder's initial rating before the first point of each version)."""
    before: dict[int, float] = {}
    out = {}
    start = conservative(ladder["mu"], ladder["sigma"])
    for p in all_items(client, f"/api/agents/{agent_id}/ratings"):
        after = conservative(p["mu"], p["sigma"])
        out[p["match_id"]] = after - before.get(p["version_id"], start)
        before[p["version_id"]] = after
    return out


def test_signed_and_ordinal_read_as_a_person_would() -> None:
    assert [signed(0.5), signed(-1.234), signed(0.001), signed(None)] == [
        "+0.50",
        "−1.23",
        "±0.00",
        "–",
    ]
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "21st",
        "22nd",
        "101st",
        "111th",
    ]


def test_agent_page_shows_its_place_heads_and_rating_change_per_match(
    site: tuple[Any, Seeded],
) -> None:
    client, s = site
    alpha = s.agent_ids[0]
    doc = page(client, f"/agents/{alpha}")
    ladder = client.get(f"/api/ladders/{s.ladder_id}").json()
    steps = rating_steps(client, alpha, ladder)
    rows = doc.by_id("results-matches").find("tbody").find_all("tr")
    mine = all_items(client, "/api/matches", agent_id=alpha)
    settled = [m for m in mine if m["status"] in ("finished", "failed")]
    # Finished (and failed) matches first, newest first; the queued one is not a row.
    assert [int(r.get("data-match") or 0) for r in rows] == [m["id"] for m in settled]
    assert s.queued_match_id not in {int(r.get("data-match") or 0) for r in rows}
    assert len(rows) == len(settled) >= 4 + 1  # the ladder matches and the failed challenge
    for row, m in zip(rows, settled, strict=True):
        (seat,) = [p for p in m["participants"] if p["agent_id"] == alpha]
        shown = cells(row)
        assert shown[0] == f"#{m['id']}" and shown[2] == m["status"]
        if m["status"] == "failed":
            assert shown[3:7] == ["–", "–", "–", "none"]
            continue
        place = 1 + sum(p["score"] < seat["score"] for p in m["participants"])
        assert shown[3] == f"{ordinal(place)} of {len(m['participants'])}"
        assert shown[4] == str(seat["score"])
        # Only a rated ladder match moves the rating; a league match shows none.
        assert shown[5] == signed(steps.get(m["id"]))
        assert (m["id"] in steps) == (m["kind"] == "ladder")
        assert shown[6] == "none"
    assert sum(1 for m in settled if m["id"] in steps) == 4
    # Queued and running: one line, naming the matches.
    line = doc.by_id("results-queue")
    queued = [m["id"] for m in mine if m["status"] == "queued"]
    assert s.queued_match_id in queued
    named = ", ".join(f"#{i}" for i in queued)
    assert " ".join(line.text().split()) == f"0 running, {len(queued)} queued: {named}."
    assert [a.get("href") for a in line.find_all("a")] == [f"/matches/{i}" for i in queued]
    # Its rank in the ladder, as the board has it.
    board = client.get(f"/api/ladders/{s.ladder_id}/leaderboard").json()["items"]
    (entry,) = [r for r in board if r["agent_id"] == alpha]
    rank = cells(doc.by_id("entries").find("tr", data_ladder=str(s.ladder_id)))[1]
    assert rank.split()[0] == str(entry["rank"])
    # The plot's main line is μ − 3σ, what ranks it; μ is dashed beside it.
    svg = doc.find("figure", data_ladder=str(s.ladder_id)).find("svg")
    assert svg.find_all("polyline", class_="conservative")
    assert "μ − 3σ, the rating that ranks" in doc.find("figcaption").text()


def test_a_faulted_seat_shows_its_badge_with_the_kind(api: Api) -> None:
    s = seed(api.session_factory, matches=1)
    alpha = s.agent_ids[0]
    with db.session_scope(api.session_factory) as session:
        mid = results.create_match(
            session,
            kind=MatchKind.ladder,
            version_ids=s.version_ids,
            ladder_id=s.ladder_id,
            seed=4242,
        ).id
    log = play_match(
        [Faulty(), bots.make("random"), bots.make("random"), bots.make("random")],
        seed=4242,
        names=["a", "b", "c", "d"],
    )
    faults = sum(1 for f in log["faults"] if f["seat"] == 0)
    assert faults > 0
    with db.session_scope(api.session_factory) as session:
        assert results.finish_match(session, mid, log, ["<b>hostile stderr</b>", None, None, None])
    r = api.client.get(f"/agents/{alpha}")
    assert "hostile stderr" not in r.text  # stderr is its owner's alone
    row = parse_html(r.text).by_id("results-matches").find("tr", data_match=str(mid))
    assert cells(row)[6] == f"{faults} faults: illegal_card"
    board = api.client.get(f"/api/ladders/{s.ladder_id}/leaderboard").json()["items"]
    (entry,) = [e for e in board if e["agent_id"] == alpha]
    assert entry["fault_rate"] == 1 / 2  # one of its two rated matches


def test_many_queued_matches_stay_one_line(api: Api) -> None:
    s = seed(api.session_factory, matches=0)
    with db.session_scope(api.session_factory) as session:
        for k in range(7):
            results.create_match(
                session,
                kind=MatchKind.ladder,
                version_ids=s.version_ids,
                ladder_id=s.ladder_id,
                seed=500 + k,
            )
    doc = page(api.client, f"/agents/{s.agent_ids[0]}")
    text = " ".join(doc.by_id("results-queue").text().split())
    assert text.startswith("0 running, ") and text.endswith(", ….")
    assert len(doc.by_id("results-queue").find_all("a")) == 5
    # Its results are its settled matches only (the failed challenge, maybe a league match).
    rows = doc.by_id("results-matches").find("tbody").find_all("tr", data_match=True)
    mine = all_items(api.client, "/api/matches", agent_id=s.agent_ids[0])
    settled = [m["id"] for m in mine if m["status"] != "queued"]
    assert [int(r.get("data-match") or 0) for r in rows] == settled
    waiting = len(mine) - len(settled)
    assert s.failed_match_id in settled and waiting >= 8
    assert text.startswith(f"0 running, {waiting} queued: #")


def test_leaderboard_columns_match_a_computation_from_the_logs(site: tuple[Any, Seeded]) -> None:
    client, s = site
    ladder = client.get(f"/api/ladders/{s.ladder_id}").json()
    matches = [
        m
        for m in all_items(client, "/api/matches", ladder_id=s.ladder_id)
        if m["status"] == "finished" and m["rated"]
    ]
    matches.sort(key=lambda m: m["id"])
    heads: dict[int, int] = defaultdict(int)
    rounds: dict[int, int] = defaultdict(int)
    faulted: dict[int, int] = defaultdict(int)
    played: dict[int, int] = defaultdict(int)
    last: dict[int, str] = {}
    previous: dict[int, int] = {}
    # The board before each match, from the rating points after the one before.
    rating = {v: conservative(ladder["mu"], ladder["sigma"]) for v in s.version_ids}
    order = {v: i for i, v in enumerate(s.version_ids)}  # the order of entry
    points: dict[int, dict[int, float]] = defaultdict(dict)
    for agent in s.agent_ids:
        for p in all_items(client, f"/api/agents/{agent}/ratings"):
            points[p["match_id"]][p["version_id"]] = conservative(p["mu"], p["sigma"])
    for m in matches:
        log = client.get(f"/api/matches/{m['id']}/log").json()
        board = sorted(s.version_ids, key=lambda v: (-rating[v], order[v]))
        for p in m["participants"]:
            v = p["version_id"]
            heads[v] += log["scores"][p["seat"]]
            rounds[v] += len(log["rounds"])
            faulted[v] += any(f["seat"] == p["seat"] for f in log["faults"])
            played[v] += 1
            last[v] = m["finished_at"]
            previous[v] = board.index(v) + 1
        rating.update(points[m["id"]])
    doc = page(client, f"/ladders/{s.ladder_id}")
    rows = doc.by_id("leaderboard").find("tbody").find_all("tr")
    api_board = client.get(f"/api/ladders/{s.ladder_id}/leaderboard").json()["items"]
    assert len(rows) == len(api_board) == 4
    now = sorted(s.version_ids, key=lambda v: (-rating[v], order[v]))
    for row, r in zip(rows, api_board, strict=True):
        v = r["version_id"]
        assert now.index(v) + 1 == r["rank"]
        change = previous[v] - r["rank"]
        assert r["rank_change"] == change and r["previous_rank"] == previous[v]
        assert abs(r["heads_per_round"] - heads[v] / rounds[v]) < 1e-12
        assert r["fault_rate"] == faulted[v] / played[v] == 0
        assert r["last_played_at"] == last[v]
        shown = cells(row)
        arrow = "▲" if change > 0 else "▼" if change < 0 else "="
        assert shown[0].startswith(f"{r['rank']} {arrow}")
        assert shown[9:] == [f"{heads[v] / rounds[v]:.2f}", "0%", when(last[v])]
    # Somebody moved: the seeded matches rotate the seats, so the board is not frozen.
    assert any(r["rank_change"] for r in api_board) or len(matches) < 2


def _signed_in(client: Any, token: str) -> None:
    doc = page(client, "/login")
    csrf = doc.by_id("signin-form").find("input", name="csrf").get("value")
    r = client.post(
        "/login", data={"csrf": csrf, "token": token, "next": "/"}, follow_redirects=False
    )
    assert r.status_code == 303, r.text[:300]


def test_the_signed_in_owners_agents_are_highlighted_on_a_personal_page_only(
    site: tuple[Any, Seeded],
) -> None:
    client, s = site
    path = f"/ladders/{s.ladder_id}"
    anonymous = client.get(path)
    assert "mine" not in parse_html(anonymous.text).by_id("leaderboard").attrs.get("class", "")
    assert not parse_html(anonymous.text).by_id("leaderboard").find_all("tr", class_="mine")
    assert parse_html(anonymous.text).by_id("leaderboard").get("data-me") is None
    # A forged session cookie is simply the anonymous page.
    client.cookies.set("cow006_session", "<script>x</script>" * 10)
    forged = parse_html(client.get(path).text).by_id("leaderboard")
    assert not forged.find_all("tr", class_="mine") and forged.get("data-me") is None
    client.cookies.clear()
    _signed_in(client, s.alice_token)
    r = client.get(path)
    assert r.headers["cache-control"] == "no-store"  # personal: never stored by anyone
    table = parse_html(r.text).by_id("leaderboard")
    assert table.get("data-me") == str(s.alice_id)
    marked = {int(tr.get("data-agent") or 0) for tr in table.find_all("tr", class_="mine")}
    assert marked == set(s.agent_ids[:2])  # alpha and beta are alice's
    for tr in table.find_all("tr", class_="mine"):
        assert "yours" in cells(tr)[1]
    # The public API's board is the same for everyone: no highlight in it.
    assert "mine" not in client.get(f"{path.replace('/ladders', '/api/ladders')}/leaderboard").text


def test_the_matches_page_centred_on_an_agent(site: tuple[Any, Seeded]) -> None:
    client, s = site
    gamma = s.agent_ids[2]
    doc = page(client, f"/matches?agent_id={gamma}")
    assert s.names[gamma] in doc.find("h1").text()
    rows = doc.by_id("results-matches").find("tbody").find_all("tr", data_match=True)
    mine = all_items(client, "/api/matches", agent_id=gamma)
    assert [int(r.get("data-match") or 0) for r in rows] == [
        m["id"] for m in mine if m["status"] in ("finished", "failed")
    ]
    for row in rows:
        m = client.get(f"/api/matches/{row.get('data-match')}").json()
        (seat,) = [p for p in m["participants"] if p["agent_id"] == gamma]
        assert cells(row)[4] == ("–" if seat["score"] is None else str(seat["score"]))
    # The agent page links here once its own list is cut short.
    assert page(client, f"/agents/{gamma}").by_id("results-matches") is not None
    # Hostile or unknown ids are one clear 404 page, never an echo.
    for raw in ("abc", "<script>alert(1)</script>", "0", "9" * 40, "999999", ""):
        r = client.get("/matches", params={"agent_id": raw})
        assert r.status_code == 404, raw
        assert "<script>alert" not in r.text
        assert "No such agent" in r.text
    assert page(client, "/matches").by_id("matches") is not None  # the unfiltered list


def test_a_long_record_links_to_the_longer_list(api: Api) -> None:
    s = seed(api.session_factory, matches=16)
    alpha = s.agent_ids[0]
    doc = page(api.client, f"/agents/{alpha}")
    assert len(doc.by_id("results-matches").find("tbody").find_all("tr")) == 15
    links = [a.get("href") for a in doc.by_id("results-h").parent.find_all("a")]
    assert f"/matches?agent_id={alpha}" in links
    longer = page(api.client, f"/matches?agent_id={alpha}").by_id("results-matches")
    assert len(longer.find("tbody").find_all("tr")) == 16 + 1  # and the failed challenge


def _luminance(hexa: str) -> float:
    channels = [int(hexa[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_text_on_the_owners_tint_is_4_5_to_1() -> None:
    """Every text colour a highlighted row holds (names, links, badges, the rank change)
    reads at WCAG AA on its tint, computed from app.css itself."""
    css = (STATIC / "app.css").read_text(encoding="utf-8")
    tint = re.search(r"tr\.mine > td \{\s*background: (#[0-9a-f]{6});", css)
    assert tint is not None
    root = dict(re.findall(r"(--[\w-]+): (#[0-9a-f]{6});", css))
    for name in ("--ink", "--muted", "--link", "--ok", "--bad", "--warn"):
        hi, lo = sorted((_luminance(root[name]), _luminance(tint.group(1))), reverse=True)
        assert (hi + 0.05) / (lo + 0.05) >= 4.5, name
