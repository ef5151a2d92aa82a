"""The pages in a real browser (Playwright driving Debian's Chromium), against uvicorn.

The leaderboard refreshing itself, an agent's page for its owner and for others, the replay
viewer stepped through a whole round and compared with the reference engine at every step,
keys and URL anchors, the owner's stderr, signing up and uploading a bot that the sandbox
validates, pages without JavaScript, phone width.  Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import LiveServer, Pages, api, position, require_browser, screenshot
from helpers.web import BUILTINS, REJECTION, finish_stored, placement_steps

from cow006 import sandbox

# Chromium drives every page here: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow

require_browser(module=True)  # one skip for the module (a failure under CI=true)

ROWS_JS = """() => [...document.querySelectorAll('#board ol[data-row]')].map(
    ol => [...ol.querySelectorAll('[data-card]')].map(li => Number(li.dataset.card)))"""

GOOD_BOT = "def play(view):\n    return min(view.hand)\n"
BROKEN_BOT = "import no_such_module_here\n\ndef play(view):\n    return view.hand[0]\n"


def test_leaderboard_refreshes_and_links_to_agents(pages: Pages, live_server: LiveServer) -> None:
    live = live_server
    page = pages.open(f"/ladders/{live.seeded.ladder_id}?refresh=1")
    board = api(live, f"/api/ladders/{live.seeded.ladder_id}/leaderboard")["items"]
    names = page.locator("#leaderboard tbody tr td:nth-child(2)").all_inner_texts()
    assert names == [r["agent"] for r in board]
    before = sum(r["matches"] for r in board)
    # Refreshing is not news: "Updated ..." is no live region, and the hidden one stays silent
    # while the board stays the same (it spoke every 5 s before).
    assert page.get_attribute("#leaderboard-status", "aria-live") is None
    assert page.get_attribute("#leaderboard-news", "aria-live") == "polite"
    page.wait_for_function("() => document.getElementById('leaderboard').dataset.updated")
    first_update = page.get_attribute("#leaderboard", "data-updated")
    page.wait_for_function(
        "t => document.getElementById('leaderboard').dataset.updated !== t", arg=first_update
    )
    assert page.inner_text("#leaderboard-news") == ""
    new_match = live.play_ladder_match()
    # ladder.js polls the API every second here (data-refresh): the new match shows up.
    page.wait_for_selector(f'#recent-matches tr[data-match="{new_match}"]', timeout=8000)
    page.wait_for_function(
        """n => [...document.querySelectorAll('#leaderboard tbody tr td:nth-child(8)')]
            .reduce((s, td) => s + Number(td.textContent), 0) === n""",
        arg=before + 4,
    )
    assert "Updated" in page.inner_text("#leaderboard-status")
    page.wait_for_function(
        "() => document.getElementById('leaderboard-news').textContent.includes('changed')"
    )
    screenshot(page, "ladder")
    # The new match may have changed the order (bots' seeds are secret and fresh each match).
    first = api(live, f"/api/ladders/{live.seeded.ladder_id}/leaderboard")["items"][0]
    page.wait_for_selector(
        f"#leaderboard tbody tr:first-child a[href='/agents/{first['agent_id']}']"
    )
    page.click(f"#leaderboard tbody tr:first-child a[href='/agents/{first['agent_id']}']")
    page.wait_for_url(f"**/agents/{first['agent_id']}")
    assert page.inner_text("h1").startswith(f"Agent {first['agent']}")


def test_league_and_unplayed_match_pages_update_themselves(
    pages: Pages, live_server: LiveServer
) -> None:
    s = live_server.seeded
    factory = live_server.app.state.session_factory
    league = pages.open(f"/leagues/{s.league_id}?refresh=1")
    assert "1 of 6 matches played" in league.inner_text("label[for=league-progress]")
    finish_stored(factory, s.league_match_ids[1], ["random", "safe"], stderr=False)
    league.wait_for_function("() => document.getElementById('league-progress').value === 2")
    assert league.locator("#round-1 .badge-finished").count() == 2
    match = pages.open(f"/matches/{s.queued_match_id}?refresh=1")
    assert match.is_visible("#pending") and "reloads by itself" in match.inner_text("#pending")
    finish_stored(factory, s.queued_match_id, BUILTINS)
    match.wait_for_selector("#viewer #controls:not([hidden])")
    assert match.locator("#board ol[data-row]").count() == 4


def test_agent_page_for_its_owner_and_for_others(pages: Pages, live_server: LiveServer) -> None:
    s = live_server.seeded
    alpha = s.agent_ids[0]
    owner = pages.open(f"/agents/{alpha}", token=s.alice_token)
    owner.wait_for_selector('[data-reason-for="1"] pre')
    assert owner.inner_text('[data-reason-for="1"] pre') == REJECTION
    assert owner.is_visible("#owner-tools")
    assert owner.locator(f'figure[data-ladder="{s.ladder_id}"] svg polyline.mu').count() == 1
    assert owner.locator("#head-to-head tbody tr").count() == 3
    assert "Signed in as alice" in owner.inner_text("#whoami")
    screenshot(owner, "agent-owner")
    for token in (None, s.bob_token):
        other = pages.open(f"/agents/{alpha}", token=token)
        other.wait_for_load_state("networkidle")
        assert other.locator("[data-reason-for]").count() == 0
        assert not other.is_visible("#owner-tools")
        assert "numpy" not in other.content()


def test_replay_a_whole_round_step_by_step(pages: Pages, live_server: LiveServer) -> None:
    s = live_server.seeded
    match_id = s.match_ids[1]
    log = api(live_server, f"/api/matches/{match_id}/log")
    players = len(log["players"])
    page = pages.open(f"/matches/{match_id}")
    page.wait_for_selector("#controls:not([hidden])")
    assert position(page) == (1, 1, 0)
    assert page.evaluate("location.hash") == "#r1t1s0"
    assert page.evaluate(ROWS_JS) == log["rounds"][0]["rows"]
    # Jump to round 2 by its URL anchor, then walk the whole round with the arrow key.
    page.evaluate("location.hash = '#r2t1s0'")
    page.wait_for_function("() => document.getElementById('viewer').dataset.round === '2'")
    rnd = log["rounds"][1]
    before = [sum(r["penalties"][seat] for r in log["rounds"][:1]) for seat in range(players)]
    steps = list(placement_steps(log, 1))
    assert len(steps) == len(rnd["turns"]) * (players + 1)
    for i, (t, k, rows) in enumerate(steps):
        if i:
            page.keyboard.press("ArrowRight")
        assert position(page) == (2, t + 1, k)
        assert page.evaluate(ROWS_JS) == rows, f"turn {t + 1}, step {k}"
        assert page.evaluate("location.hash") == f"#r2t{t + 1}s{k}"
        if k == players:
            assert rows == rnd["turns"][t]["rows"]
    totals = page.locator("#players tbody td.total").all_inner_texts()
    assert [int(x) for x in totals] == [
        b + p for b, p in zip(before, rnd["penalties"], strict=True)
    ]
    assert "End of round 2" in page.inner_text("#narration")
    # One more step starts round 3; back again; Shift+arrows move by turns.
    page.keyboard.press("ArrowRight")
    assert position(page) == (3, 1, 0)
    page.keyboard.press("ArrowLeft")
    assert position(page) == (2, 10, players)
    page.keyboard.press("Shift+ArrowLeft")
    assert position(page) == (2, 10, 0)
    page.keyboard.press("Shift+ArrowLeft")
    assert position(page) == (2, 9, 0)
    page.keyboard.press("Shift+ArrowRight")
    assert position(page) == (2, 10, 0)
    page.keyboard.press("Home")
    assert position(page) == (1, 1, 0)


def test_replay_highlights_takes_controls_and_shared_anchors(
    pages: Pages, live_server: LiveServer
) -> None:
    s = live_server.seeded
    match_id = s.match_ids[2]
    log = api(live_server, f"/api/matches/{match_id}/log")
    players = len(log["players"])
    # The first take of the match, and the placing step that makes it.
    r, t, take = next(
        (r, t, turn["takes"][0])
        for r, rnd in enumerate(log["rounds"])
        for t, turn in enumerate(rnd["turns"])
        if turn["takes"]
    )
    cards = log["rounds"][r]["turns"][t]["cards"]
    k = sorted(cards).index(cards[take["seat"]]) + 1
    anchor = f"#r{r + 1}t{t + 1}s{k}"
    page = pages.open(f"/matches/{match_id}{anchor}")  # a shared link opens at its step
    page.wait_for_selector("#controls:not([hidden])")
    assert position(page) == (r + 1, t + 1, k)
    took = page.locator(".row-wrap.took")
    assert took.count() == 1
    assert took.get_attribute("data-row-wrap") == str(take["row"])
    taken = took.locator("[data-taken-card]").evaluate_all(
        "els => els.map(e => Number(e.dataset.takenCard))"
    )
    assert taken == take["cards"]
    assert page.evaluate(ROWS_JS)[take["row"]] == [cards[take["seat"]]]
    reason = "6th card" if take["reason"] == "sixth" else "lowest card"
    assert reason in took.locator(".taken").inner_text()
    assert "takes" in page.inner_text("#narration")
    assert page.locator("#players tbody tr.taking").get_attribute("data-seat") == str(take["seat"])
    screenshot(page, "replay-take")
    # The step link is this step's anchor; buttons and selects move and update it.
    assert page.get_attribute("#step-link", "href") == anchor
    page.select_option("#round-select", label="1")
    page.select_option("#turn-select", label="5")
    assert position(page) == (1, 5, 0)
    assert page.evaluate("location.hash") == "#r1t5s0"
    page.click("#next-step")
    assert position(page) == (1, 5, 1)
    page.click("#prev-turn")
    assert position(page) == (1, 5, 0)
    page.click("#next-turn")
    assert position(page) == (1, 6, 0)
    page.click("#prev-step")
    assert position(page) == (1, 5, players)
    # Play runs the steps by itself, pause stops them.
    page.select_option("#speed-select", label="fast")
    page.click("#play")
    assert page.get_attribute("#play", "aria-pressed") == "true"
    page.wait_for_function("() => document.getElementById('viewer').dataset.turn === '7'")
    page.click("#play")
    assert page.get_attribute("#play", "aria-pressed") == "false"
    paused = position(page)
    page.wait_for_timeout(700)
    assert position(page) == paused
    page.keyboard.press("End")
    last = log["rounds"][-1]
    assert position(page) == (len(log["rounds"]), len(last["turns"]), players)
    assert page.evaluate(ROWS_JS) == last["turns"][-1]["rows"]
    assert "The match is over" in page.inner_text("#narration")
    totals = [int(x) for x in page.locator("#players tbody td.total").all_inner_texts()]
    assert totals == log["scores"]
    href = page.get_attribute("a[download]", "href")
    assert href == f"/api/matches/{match_id}/log"
    assert api(live_server, href) == log


def test_owner_sees_the_stderr_of_their_seats(pages: Pages, live_server: LiveServer) -> None:
    s = live_server.seeded
    match_id = s.match_ids[0]
    match = api(live_server, f"/api/matches/{match_id}")
    mine = [p for p in match["participants"] if p["owner_id"] == s.alice_id]
    page = pages.open(f"/matches/{match_id}", token=s.alice_token)
    page.wait_for_selector("#stderr:not([hidden]) [data-stderr-seat]")
    shown = page.locator("[data-stderr-seat]")
    assert shown.count() == len(mine) == 2
    for p in mine:
        text = page.inner_text(f'[data-stderr-seat="{p["seat"]}"]')
        assert text.strip() == f"{p['label']} says hello in match {match_id}"
    anonymous = pages.open(f"/matches/{match_id}")
    anonymous.wait_for_load_state("networkidle")
    assert anonymous.locator("[data-stderr-seat]").count() == 0
    assert anonymous.is_hidden("#stderr")


def test_register_create_an_agent_and_upload_a_bot(
    pages: Pages, live_server: LiveServer, tmp_path: Path
) -> None:
    if not sandbox.probe().ok:
        if os.environ.get("COW006_REQUIRE_SANDBOX") == "1":
            pytest.fail(
                f"COW006_REQUIRE_SANDBOX=1 but the sandbox does not work: {sandbox.probe()}"
            )
        pytest.skip("the sandbox does not work here: uploads cannot be validated")
    page = pages.open("/upload")
    assert page.is_visible("#signin-form") and page.is_hidden("#upload-section")
    # Signing in by pasting a token: a wrong one is refused, alice's shows her agents.
    page.fill("#token-input", "not-a-token")
    page.click("#signin-form button[type=submit]")
    page.wait_for_selector("#signin-error:not([hidden])")
    assert page.inner_text("#signin-error") == "Invalid API token (unknown, revoked or expired)"
    page.fill("#token-input", live_server.seeded.alice_token)
    page.click("#signin-form button[type=submit]")
    page.wait_for_selector("#agents-section:not([hidden]) #my-agents a")
    assert page.locator("#my-agents a").all_inner_texts() == ["alpha", "beta"]
    assert page.inner_text("#me-name") == "alice"
    page.click("#sign-out")
    page.wait_for_selector("#signed-out:not([hidden])")
    assert page.evaluate("localStorage.getItem('cow006.token')") is None
    assert page.is_hidden("#upload-section")
    page.fill("#register-name", "x")
    page.click("#register-form button[type=submit]")
    assert "2 to 40" in page.inner_text("#register-error")
    page.fill("#register-name", "alice")  # taken: the API's detail is shown
    page.click("#register-form button[type=submit]")
    page.wait_for_selector("#register-error:not([hidden])")
    page.wait_for_function(
        "() => document.getElementById('register-error').textContent.includes('taken')"
    )
    page.fill("#register-name", "carol")
    page.click("#register-form button[type=submit]")
    page.wait_for_selector("#new-token:not([hidden])")
    token = page.inner_text("#new-token-value").strip()
    assert re.fullmatch(r"\S{20,}", token)
    assert page.evaluate("localStorage.getItem('cow006.token')") == token
    page.wait_for_selector("#upload-section:not([hidden])")
    assert page.is_hidden("#signed-out")
    assert "carol" in page.inner_text("#whoami")
    page.fill("#agent-name", "carolbot")
    page.click("#agent-form button[type=submit]")
    page.wait_for_selector("#my-agents a:text('carolbot')")
    assert page.eval_on_selector("#upload-agent", "s => s.selectedOptions[0].text") == "carolbot"
    # A file the API refuses: its detail, plainly.
    page.set_input_files(
        "#upload-file", files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"hi"}]
    )
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#upload-error:not([hidden])")
    assert page.inner_text("#upload-error").strip()
    # A file past the upload cap (issue 19): the page states the caps, and refuses it with
    # the API's sentence before sending a byte of it.
    assert "At most 20 MiB per upload (20971520 bytes)" in page.inner_text("#upload-limits")
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    big = tmp_path / "big.zip"  # a file, not a buffer: the browser reads it itself
    with open(big, "wb") as f:
        f.truncate(20 * 2**20 + 1)
    page.set_input_files("#upload-file", files=[str(big)])
    page.click("#upload-form button[type=submit]")
    page.wait_for_function(
        "() => document.getElementById('upload-error').textContent.includes('20971520')"
    )
    assert page.inner_text("#upload-error").strip() == (
        "An upload is at most 20 MiB (20971520 bytes)"  # showError's capital
    )
    assert not [u for u in posts if u.endswith("/versions")], posts
    # A bot that fails to import: rejected, with the reason.
    page.set_input_files(
        "#upload-file",
        files=[{"name": "bot.py", "mimeType": "text/x-python", "buffer": BROKEN_BOT.encode()}],
    )
    page.click("#upload-form button[type=submit]")
    page.wait_for_function(
        "() => document.getElementById('upload-status').textContent === 'rejected'", timeout=60_000
    )
    assert "no_such_module_here" in page.inner_text("#upload-reason")
    # A good bot: pending, then active.
    page.set_input_files(
        "#upload-file",
        files=[{"name": "bot.py", "mimeType": "text/x-python", "buffer": GOOD_BOT.encode()}],
    )
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#upload-result:not([hidden])")
    assert page.inner_text("#upload-version-link") == "carolbot@2"
    page.wait_for_function(
        "() => document.getElementById('upload-status').textContent === 'active'", timeout=60_000
    )
    assert page.is_hidden("#upload-reason")
    assert page.is_hidden("#upload-error")
    screenshot(page, "upload")
    page.click("#upload-version-link")
    page.wait_for_selector('#versions tr[data-version="1"] .badge-rejected')
    page.wait_for_selector('[data-reason-for="1"] pre')
    assert page.locator('#versions tr[data-version="2"] .badge-active').count() == 1


def test_pages_without_javascript(pages: Pages, live_server: LiveServer) -> None:
    s = live_server.seeded
    page = pages.open(f"/ladders/{s.ladder_id}", javascript=False)
    assert page.locator("#leaderboard tbody tr").count() == 4
    match_id = s.match_ids[0]
    log = api(live_server, f"/api/matches/{match_id}/log")
    page.goto(f"/matches/{match_id}")
    rows = page.locator("#board ol[data-row]")
    assert rows.count() == 4
    for i, row in enumerate(log["rounds"][0]["rows"]):
        cards = page.locator(f'#board ol[data-row="{i}"] [data-card]').all_inner_texts()
        assert [int(c.split()[0]) for c in cards] == row
    assert page.is_hidden("#controls") and page.is_hidden("#revealed-section")
    assert page.is_visible("#text-r1t1")
    screenshot(page, "match-no-js")


def record_urls(page: Any) -> list[str]:
    """Every URL the page navigates to (its history entries) or requests, from now on."""
    seen: list[str] = [page.url]
    page.on("framenavigated", lambda frame: seen.append(frame.url))
    page.on("request", lambda request: seen.append(request.url))
    return seen


@pytest.mark.parametrize("javascript", [False, True], ids=["no-js", "js"])
def test_no_token_in_any_url_signing_in_registering_and_out(
    pages: Pages, live_server: LiveServer, javascript: bool
) -> None:
    token = live_server.seeded.alice_token
    page = pages.open("/login", javascript=javascript)
    urls = record_urls(page)
    # A wrong token: refused on the page, and not in any URL either.
    page.fill("#token-input", "W" * 43)
    page.click("#signin-form button[type=submit]")
    page.wait_for_selector("#signin-error:not([hidden])")
    page.fill("#token-input", token)
    with page.expect_navigation():
        page.click("#signin-form button[type=submit]")
    page.wait_for_selector("#whoami[data-user=alice]")
    assert page.url.endswith("/upload")
    # Every page now knows alice (the cookie), without the token anywhere in the page.
    page.goto("/")
    assert "alice" in page.inner_text("#whoami")
    assert token not in page.content()
    cookies = {c["name"]: c for c in page.context.cookies()}
    session = cookies["cow006_session"]
    assert session["httpOnly"] and session["sameSite"] == "Lax"
    if javascript:
        assert page.evaluate("document.cookie").find("cow006_session") == -1  # HttpOnly
        assert page.evaluate("localStorage.getItem('cow006.token')") == token
    # Signing out from the header.
    with page.expect_navigation():
        page.click("#whoami button[type=submit]")
    page.wait_for_selector("#whoami:not([data-user])")
    assert "cow006_session" not in {c["name"] for c in page.context.cookies()}
    if javascript:
        assert page.evaluate("localStorage.getItem('cow006.token')") is None
    # Registering: the new token is shown once, in the page, never in a URL.
    page.goto("/login")
    page.fill("#register-name", f"dora{int(javascript)}")
    with page.expect_navigation():
        page.click("#register-form button[type=submit]")
    page.wait_for_selector("#new-token:not([hidden])")
    fresh = page.inner_text("#new-token-value").strip()
    assert len(fresh) >= 40
    assert f"dora{int(javascript)}" in page.inner_text("#whoami")
    screenshot(page, f"registered-{'js' if javascript else 'no-js'}")
    page.goto("/")
    leaked = [u for u in urls if token in u or fresh in u or "token=" in u]
    assert leaked == [], leaked
    assert len(urls) > 5


def test_phone_width(pages: Pages, live_server: LiveServer) -> None:
    s = live_server.seeded
    shots = {
        "phone-home": "/",
        "phone-ladder": f"/ladders/{s.ladder_id}",
        "phone-agent": f"/agents/{s.agent_ids[1]}",
        "phone-league": f"/leagues/{s.league_id}",
        "phone-replay": f"/matches/{s.match_ids[0]}#r1t4s2",
        "phone-upload": "/upload",
    }
    page = pages.open("/", width=390, height=844, token=s.alice_token)
    for name, path in shots.items():
        page.goto(path)
        page.wait_for_load_state("networkidle")
        # Nothing sticks out sideways: wide tables scroll inside their own boxes.
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, path
        screenshot(page, name)
    # The replay's controls and the four rows fit the screen.
    page.goto(f"/matches/{s.match_ids[0]}#r1t4s2")
    page.wait_for_selector("#controls:not([hidden])")
    for selector in ("#next-step", "#prev-step", "#play", '#board ol[data-row="3"]'):
        box = page.locator(selector).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, selector


NAMES_JS = """() => {
  const named = (el) => {
    if (el.getAttribute('aria-label')) return el.getAttribute('aria-label');
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      return by.split(/\\s+/).map(id => document.getElementById(id)?.textContent || '').join(' ');
    }
    if (el.labels && el.labels.length) return [...el.labels].map(l => l.textContent).join(' ');
    return el.textContent || el.getAttribute('title') || '';
  };
  const controls = 'a[href], button, input:not([type=hidden]), select, textarea';
  return [...document.querySelectorAll(controls)]
    .filter(el => !named(el).trim())
    .map(el => el.outerHTML.slice(0, 120));
}"""


def test_every_control_has_an_accessible_name(pages: Pages, live_server: LiveServer) -> None:
    s = live_server.seeded
    page = pages.open("/upload", token=s.alice_token)
    for path in (
        "/",
        f"/ladders/{s.ladder_id}",
        f"/agents/{s.agent_ids[0]}",
        f"/leagues/{s.league_id}",
        f"/matches/{s.match_ids[0]}",
        "/upload",
    ):
        page.goto(path)
        page.wait_for_load_state("networkidle")
        assert page.evaluate(NAMES_JS) == [], path
