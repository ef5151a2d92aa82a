"""The results view in a real browser (Playwright driving Debian's Chromium) at phone width.

On a 390×844 screen the leaderboard's rank and μ − 3σ are in view without any horizontal
scroll, even beside a 40-character agent name, both as the server renders the board and as
ladder.js redraws it; the redrawn rows keep the rank change and the highlight of the
signed-in owner's agents (a browser signed in with a saved token: ladder.js asks the API who
it is).  Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from helpers.browser import LiveServer, Pages, require_browser, screenshot

from cow006_platform import db
from cow006_platform.models import Agent, AgentVersion, LadderEntry, User, VersionStatus
from cow006_platform.web.routes import number, percent

pytestmark = pytest.mark.slow

require_browser(module=True)

WIDTH, HEIGHT = 390, 844
LONG_NAME = "W" * 40  # the longest name an agent may have, and the widest letter

BOXES_JS = """() => [...document.querySelectorAll('#leaderboard tbody tr')].map(tr => {
  const box = (sel) => { const r = tr.querySelector(sel).getBoundingClientRect();
                         return [r.left, r.right]; };
  return {agent: tr.dataset.agent, rank: box('td.rank'), cons: box('td.conservative'),
          mine: tr.classList.contains('mine')};
})"""


def _enter_long_named_agent(live: LiveServer) -> int:
    with db.session_scope(live.app.state.session_factory) as s:
        bob = s.query(User).filter(User.name == "bob").one()
        agent = Agent(owner_id=bob.id, name=LONG_NAME)
        s.add(agent)
        s.flush()
        version = AgentVersion(
            agent_id=agent.id,
            number=1,
            sha256="f" * 64,
            filename="bot.py",
            size=10,
            unpacked_size=10,
            files=1,
            status=VersionStatus.active,
        )
        s.add(version)
        s.flush()
        s.add(
            LadderEntry(ladder_id=live.seeded.ladder_id, agent_id=agent.id, version_id=version.id)
        )
        return agent.id


def _check_in_view(page: Any, alice_agents: set[int] | None) -> list[dict[str, Any]]:
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    assert (
        page.evaluate("document.querySelector('#leaderboard').closest('.scroll').scrollLeft") == 0
    )
    rows = page.evaluate(BOXES_JS)
    assert len(rows) == 5
    for row in rows:
        for cell in ("rank", "cons"):
            left, right = row[cell]
            assert 0 <= left < right <= WIDTH, (row["agent"], cell, row[cell])
    if alice_agents is not None:
        assert {int(r["agent"]) for r in rows if r["mine"]} == alice_agents
    return rows


def test_ladder_js_draws_the_rows_the_server_drew(pages: Pages, live_server: LiveServer) -> None:
    """The redrawn board (rank change, the new columns) reads exactly as the server's: the
    same markup, compared while the board stood still (a match may finish meanwhile)."""
    path = f"/ladders/{live_server.seeded.ladder_id}?refresh=1"
    rows_js = (
        "() => [...document.querySelectorAll('#leaderboard tbody tr')].map(tr => tr.innerHTML)"
    )

    def norm(rows: list[str]) -> list[str]:
        return [re.sub(r">\s+<", "><", " ".join(h.split())) for h in rows]

    plain = pages.open(path, javascript=False)
    page = pages.open(path)
    for _ in range(5):
        plain.reload()
        served = norm(plain.evaluate(rows_js))
        stamp = page.get_attribute("#leaderboard", "data-updated")
        page.wait_for_function(
            "t => document.getElementById('leaderboard').dataset.updated !== t", arg=stamp
        )
        drawn = norm(page.evaluate(rows_js))
        plain.reload()
        if norm(plain.evaluate(rows_js)) == served:
            break
    assert len(served) == 4 and drawn == served


def test_rank_and_conservative_rating_in_view_at_phone_width(
    pages: Pages, live_server: LiveServer
) -> None:
    live = live_server
    s = live.seeded
    long_id = _enter_long_named_agent(live)
    path = f"/ladders/{s.ladder_id}?refresh=1"
    # As the server renders it (no JavaScript).
    plain = pages.open(path, width=WIDTH, height=HEIGHT, javascript=False)
    _check_in_view(plain, None)
    screenshot(plain, "results-phone-ladder-nojs")
    # Redrawn by ladder.js, signed in with a saved token (alice: alpha and beta are hers).
    page = pages.open(path, width=WIDTH, height=HEIGHT, token=s.alice_token)
    page.wait_for_function("() => document.querySelector('#leaderboard tr.mine')")
    live.play_ladder_match()  # the board changes: ranks move, the redraw keeps the columns
    page.wait_for_function(
        "() => [...document.querySelectorAll('#leaderboard .rank-change')].length >= 4"
    )
    rows = _check_in_view(page, set(s.agent_ids[:2]))
    assert long_id in {int(r["agent"]) for r in rows}
    texts = page.locator("#leaderboard tbody tr.mine td.agent").all_inner_texts()
    assert texts and all("yours" in t for t in texts)
    # The owner's columns give way on a phone; on a wide screen they are there.
    assert not page.locator("#leaderboard td.opt").first.is_visible()
    screenshot(page, "results-phone-ladder")
    wide = pages.open(path, token=s.alice_token)
    assert wide.locator("#leaderboard td.opt").first.is_visible()
    # The agent page at phone width: its results table scrolls in its own box.
    agent = pages.open(f"/agents/{s.agent_ids[0]}", width=WIDTH, height=HEIGHT)
    assert agent.evaluate("document.documentElement.scrollWidth") <= WIDTH
    place = agent.locator("#results-matches tbody tr td.place").first.bounding_box()
    assert place is not None and place["x"] + place["width"] <= WIDTH
    screenshot(agent, "results-phone-agent")


def test_the_scripts_round_numbers_as_the_server_does(pages: Pages) -> None:
    """A tie goes to the even digit in both (12.125 -> 12.12, 12.5 % -> 12 %)."""
    page = pages.open("/")
    values = [12.125, 0.125, -0.125, 2.675, 1.005, 0.0, -3.5, 13.4949, 25.0 / 3, 7.0 / 8, -0.001]
    values += [1e-7, 123.456, 0.25, 0.75, 2.5, 0.05]
    rates = [0.125, 0.135, 0.5, 1 / 3, 0.005, 0.015, 0.0, 1.0, 0.625, 0.145]
    got = page.evaluate(
        "([vs, rs]) => [vs.map(v => Cow.num(v)), vs.map(v => Cow.num(v, 1)), rs.map(Cow.percent)]",
        [values, rates],
    )
    assert got == [
        [number(v) for v in values],
        [number(v, 1) for v in values],
        [percent(r) for r in rates],
    ]
