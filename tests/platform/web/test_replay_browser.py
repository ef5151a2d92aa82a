"""The replay a 6 nimmt player reads, in a real browser (Playwright driving Debian's Chromium).

Row heads and the danger slot at every step of a round, the hands toggle, the scrubber to the
last step and the match's winner, a faulting seat's fallback card marked with its kind, a
"lowest" take explained by the cost of each row, the owner's marked stderr lines at their turn
(and nobody else's), the turn strip at 1366x900 and the controls staying with the board at
phone width.  Screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.browser import LiveServer, Pages, api, position, require_browser, screenshot
from helpers.web import placement_steps

from cow006 import Agent, View, bots, play_match
from cow006.cards import heads_of
from cow006_platform import db, results
from cow006_platform.models import MatchKind

pytestmark = pytest.mark.slow  # Chromium drives every page here

require_browser(module=True)

ROWS_JS = """() => [...document.querySelectorAll('#board ol[data-row]')].map(
    ol => [...ol.querySelectorAll('[data-card]')].map(li => Number(li.dataset.card)))"""
HEADS_JS = """() => [...document.querySelectorAll('#board [data-row-heads]')].map(
    s => Number(s.dataset.rowHeads))"""
FULL_JS = """() => [...document.querySelectorAll('#board [data-row-wrap]')].map(
    w => [w.classList.contains('full'), w.querySelectorAll('.slot.danger').length])"""
HANDS_JS = """() => [...document.querySelectorAll('#hand-list [data-hand-seat]')].map(
    h => [...h.querySelectorAll('[data-hand-card]')].map(li => Number(li.dataset.handCard)))"""

# What the faulting seat's owner "wrote" to stderr: lines marked with their turn, one hostile.
HOSTILE = "<img src=x onerror=alert(1)> & </pre><script>alert(2)</script>"
STDERR = f"starting up\nr1t2 thinking about the second turn\nr1t3 {HOSTILE}\nunmarked line\n"


class Crashing(Agent):
    """Raises at every decision: three faults, then a forfeit."""

    def play(self, view: View) -> int:
        raise RuntimeError("boom <b>bold</b>")


class SulksAtRoundEnd(Agent):
    """Plays its lowest card, and fails in every end-of-round notice."""

    def play(self, view: View) -> int:
        return min(view.hand)

    def on_round_end(self, result: dict[str, Any]) -> None:
        raise ValueError("no thanks")


def store(live: LiveServer, agents: list[Agent], stderr: list[str | None]) -> int:
    """A finished challenge of the first len(agents) seeded versions, played by ``agents``."""
    s = live.seeded
    factory = live.app.state.session_factory
    n = len(agents)
    with db.session_scope(factory) as session:
        match = results.create_match(
            session, kind=MatchKind.challenge, version_ids=s.version_ids[:n], seed=5
        )
        match_id = match.id
        labels = [seat.version.label for seat in sorted(match.seats, key=lambda x: x.seat)]
    log = play_match(agents, seed=5, names=labels, agent_seeds=list(range(1, n + 1)))
    with db.session_scope(factory) as session:
        assert results.finish_match(session, match_id, log, stderr)
    return match_id


@pytest.fixture(scope="module")
def fault_match(live_server: LiveServer) -> int:
    """A finished challenge whose seat 0 (alice's alpha) faults at once, with marked stderr."""
    agents = [Crashing(), bots.make("random"), bots.make("safe")]
    return store(live_server, agents, [STDERR, None, None])


def wait_viewer(page: Any) -> None:
    page.wait_for_selector("#controls:not([hidden])")


def test_heads_danger_slot_hands_and_the_winner(pages: Pages, live_server: LiveServer) -> None:
    match_id = live_server.seeded.match_ids[3]
    log = api(live_server, f"/api/matches/{match_id}/log")
    players = len(log["players"])
    page = pages.open(f"/matches/{match_id}#r1t1s0")
    wait_viewer(page)
    assert page.is_hidden("#hands")
    page.click("#hands-toggle")
    assert page.get_attribute("#hands-toggle", "aria-pressed") == "true"
    rnd = log["rounds"][0]
    seen_full = False
    for i, (t, k, rows) in enumerate(placement_steps(log, 0)):
        if i:
            page.keyboard.press("ArrowRight")
        assert position(page) == (1, t + 1, k)
        assert page.evaluate(ROWS_JS) == rows
        assert page.evaluate(HEADS_JS) == [heads_of(r) for r in rows], f"turn {t + 1}, step {k}"
        full = [[len(r) == 5, 1 if len(r) == 5 else 0] for r in rows]
        assert page.evaluate(FULL_JS) == full, f"turn {t + 1}, step {k}"
        seen_full = seen_full or any(f for f, _ in full)
        if k == 0:  # the hands before this turn: the deal less the cards of the turns before
            played = {c for turn in rnd["turns"][:t] for c in turn["cards"]}
            expected = [[c for c in hand if c not in played] for hand in rnd["hands"]]
            assert page.evaluate(HANDS_JS) == expected, f"turn {t + 1}"
            if seen_full:
                screenshot(page, "replay-danger-hands")
    page.click("#hands-toggle")
    assert page.is_hidden("#hands")
    # The end of round 1 names its winner.
    assert position(page) == (1, 10, players)
    least = min(rnd["penalties"])
    winners = [log["players"][s]["agent"] for s, p in enumerate(rnd["penalties"]) if p == least]
    assert page.is_visible("#outcome")
    assert all(name in page.inner_text("#outcome") for name in winners)
    assert "Round 1 won by" in page.inner_text("#outcome")
    # The scrubber covers the whole match: its end is the last step, with the match's winner.
    steps = sum(len(r["turns"]) * (players + 1) for r in log["rounds"])
    assert page.get_attribute("#scrubber", "max") == str(steps - 1)
    page.fill("#scrubber", str(steps - 1))
    last = log["rounds"][-1]
    assert position(page) == (len(log["rounds"]), len(last["turns"]), players)
    assert page.evaluate(ROWS_JS) == last["turns"][-1]["rows"]
    champions = [log["players"][s]["agent"] for s, r in enumerate(log["ranks"]) if r == 1]
    text = page.inner_text("#outcome")
    assert all(name in text for name in champions)
    assert "the match with" in text
    page.fill("#scrubber", "0")
    assert position(page) == (1, 1, 0)
    assert page.is_hidden("#outcome")


def test_a_faulting_seat_s_fallback_card_is_marked_with_its_kind(
    pages: Pages, live_server: LiveServer, fault_match: int
) -> None:
    log = api(live_server, f"/api/matches/{fault_match}/log")
    assert [f["turn"] for f in log["faults"]] == [0, 1, 2] and log["forfeited"] == [0]
    page = pages.open(f"/matches/{fault_match}#r1t2s0")
    wait_viewer(page)
    mine = page.locator('#revealed li[data-seat="0"]')
    assert "fallback" in (mine.get_attribute("class") or "")
    assert mine.locator(".card.fallback").count() == 1
    assert "fallback card: exception" in mine.locator(".fault-mark").inner_text()
    assert "boom" in (mine.get_attribute("title") or "")
    assert "fallback card" in page.inner_text("#narration")
    assert page.locator('#players tr[data-seat="0"]').get_attribute("class") == "faulted"
    # The other seats' cards are their own choices: no mark.
    for seat in (1, 2):
        assert page.locator(f'#revealed li[data-seat="{seat}"] .fault-mark').count() == 0
    screenshot(page, "replay-fallback")
    # The timeline under the scrubber: the faulty turns red, the forfeited seat's after them.
    kinds = page.eval_on_selector_all(
        "#timeline .turn-cell",
        "cells => cells.map(c => c.classList.contains('fault') ? 'F' : "
        "c.classList.contains('forfeit') ? 'f' : '-')",
    )
    assert len(kinds) == sum(len(r["turns"]) for r in log["rounds"])
    assert "".join(kinds[:10]) == "FFFfffffff" and set(kinds[10:]) == {"f"}
    # Once forfeited, every card of the seat is a fallback, marked as such (a timeline click).
    page.locator("#timeline .turn-cell").nth(5).click()
    assert position(page) == (1, 6, 0)
    assert page.locator("#timeline .turn-cell.now").count() == 1
    assert "forfeited" in mine.locator(".fault-mark").inner_text()
    # Without a fault the marks go again (another match).
    clean = pages.open(f"/matches/{live_server.seeded.match_ids[0]}#r1t2s0")
    wait_viewer(clean)
    assert clean.locator("#revealed .fault-mark").count() == 0
    assert page.locator("script", has_text="alert").count() == 0


def lowest_take(live: LiveServer, match_ids: list[int]) -> tuple[int, str, dict[str, Any]]:
    for match_id in match_ids:
        log = api(live, f"/api/matches/{match_id}/log")
        for r, rnd in enumerate(log["rounds"]):
            for t, turn in enumerate(rnd["turns"]):
                for take in turn["takes"]:
                    if take["reason"] == "lowest":
                        k = sorted(turn["cards"]).index(turn["cards"][take["seat"]]) + 1
                        return match_id, f"#r{r + 1}t{t + 1}s{k}", log
    raise AssertionError("no seeded match has a lowest take")


def test_a_lowest_take_is_explained_with_the_cost_of_each_row(
    pages: Pages, live_server: LiveServer, fault_match: int
) -> None:
    match_id, anchor, log = lowest_take(live_server, [fault_match, *live_server.seeded.match_ids])
    page = pages.open(f"/matches/{match_id}{anchor}")
    wait_viewer(page)
    r, t, k = position(page)
    turn = log["rounds"][r - 1]["turns"][t - 1]
    seat = sorted(range(len(turn["cards"])), key=turn["cards"].__getitem__)[k - 1]
    take = next(x for x in turn["takes"] if x["seat"] == seat)
    # The cost of each row when the player chose: the rows before the turn's first placement.
    before = log["rounds"][r - 1]["turns"][t - 2]["rows"] if t > 1 else log["rounds"][r - 1]["rows"]
    costs = [heads_of(row) for row in before]
    shown = page.inner_text(".row-wrap.took .taken .costs")
    for j, c in enumerate(costs):
        assert f"row {j + 1}: {c}" in shown
    assert f"row {take['row'] + 1}: {costs[take['row']]} (chosen)" in shown
    cheapest = costs[take["row"]] == min(costs)
    if cheapest:
        assert "the chosen row is the cheapest" in shown
    else:
        assert f"is not the cheapest ({min(costs)} head" in shown
    assert "Each row's cost in heads" in page.inner_text("#narration")
    screenshot(page, "replay-lowest")


def test_the_owner_s_marked_stderr_lines_show_at_their_turn(
    pages: Pages, live_server: LiveServer, fault_match: int
) -> None:
    s = live_server.seeded
    page = pages.open(f"/matches/{fault_match}#r1t2s0", token=s.alice_token)
    wait_viewer(page)
    page.wait_for_selector("#turn-stderr:not([hidden]) [data-turn-stderr-seat]")
    assert page.inner_text('[data-turn-stderr-seat="0"]') == "thinking about the second turn"
    page.keyboard.press("Shift+ArrowRight")
    page.wait_for_function("() => document.getElementById('viewer').dataset.turn === '3'")
    assert page.inner_text('[data-turn-stderr-seat="0"]') == HOSTILE  # as text, not markup
    assert page.locator("#turn-stderr img, #turn-stderr script").count() == 0
    page.keyboard.press("Shift+ArrowRight")
    assert page.locator("[data-turn-stderr-seat]").count() == 0
    assert "No marked line" in page.inner_text("#turn-stderr")
    # The whole text stays below, with the note that stderr has no turn marks of its own.
    assert "unmarked line" in page.inner_text('[data-stderr-seat="0"]')
    assert "no turn marks" in page.inner_text("#stderr-note")
    for token in (None, s.bob_token):  # nobody else sees a line of it
        other = pages.open(f"/matches/{fault_match}#r1t2s0", token=token)
        wait_viewer(other)
        other.wait_for_load_state("networkidle")
        assert other.is_hidden("#turn-stderr")
        assert "thinking" not in other.content()


def test_the_turn_strip_fits_at_1366x900(pages: Pages, live_server: LiveServer) -> None:
    match_id = live_server.seeded.match_ids[0]
    page = pages.open(f"/matches/{match_id}#r1t3s2", width=1366, height=900)
    wait_viewer(page)
    assert page.evaluate("window.scrollY") == 0  # as the page opens, nothing scrolled
    strip = page.locator("#revealed-section").bounding_box()
    board = page.locator("#board").bounding_box()
    assert strip is not None and board is not None
    # Nothing of the strip sticks out: not sideways, not below the screen, with the board.
    assert strip["x"] >= 0 and strip["x"] + strip["width"] <= 1366
    assert strip["y"] >= 0 and strip["y"] + strip["height"] <= 900, strip
    assert board["y"] >= 0 and board["y"] + board["height"] <= 900, board
    overflow = page.eval_on_selector(
        "#revealed", "ol => [ol.scrollWidth - ol.clientWidth, ol.scrollHeight - ol.clientHeight]"
    )
    assert overflow == [0, 0]
    cards = page.locator("#revealed [data-played-card]")
    assert cards.count() == 4
    for i in range(4):
        box = cards.nth(i).bounding_box()
        assert box is not None and box["x"] + box["width"] <= strip["x"] + strip["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= 1366
    screenshot(page, "replay-1366", full_page=False)


def test_a_full_row_fits_at_phone_width(
    pages: Pages, live_server: LiveServer, fault_match: int
) -> None:
    log = api(live_server, f"/api/matches/{fault_match}/log")
    # The first turn of round 1 that starts with a row of 5 cards (the match is deterministic).
    t, j = next(
        (t + 1, j)
        for t, turn in enumerate(log["rounds"][0]["turns"][:-1])
        for j, row in enumerate(turn["rows"])
        if len(row) == 5
    )
    page = pages.open(f"/matches/{fault_match}#r1t{t + 1}s0", width=390, height=844)
    wait_viewer(page)
    wrap = page.locator(f'[data-row-wrap="{j}"]')
    assert "full" in (wrap.get_attribute("class") or "")
    last_card = wrap.locator("[data-card]").last.bounding_box()
    slot = wrap.locator(".slot.danger").bounding_box()
    heads = wrap.locator(".row-heads").bounding_box()
    assert last_card and slot and heads
    assert last_card["x"] + last_card["width"] <= slot["x"]
    assert slot["x"] + slot["width"] <= heads["x"]  # the slot does not run into the heads
    assert heads["x"] + heads["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "phone-replay-full-row", full_page=False)


def test_controls_stay_with_the_board_at_phone_width(pages: Pages, live_server: LiveServer) -> None:
    match_id = live_server.seeded.match_ids[0]
    page = pages.open(f"/matches/{match_id}#r1t4s2", width=390, height=844)
    wait_viewer(page)
    # Scrolled down to the turn strip (below the board), the controls are still on screen,
    # above the board and covering none of the strip.
    page.locator("#revealed-section").scroll_into_view_if_needed()
    for target in ('#board ol[data-row="3"]', "#revealed-section", "#players"):
        page.locator(target).scroll_into_view_if_needed()
        controls = page.locator("#controls").bounding_box()
        seen = page.locator(target).bounding_box()
        assert controls is not None and seen is not None
        assert controls["y"] >= 0 and controls["y"] + controls["height"] <= 844, target
        for button in ("#next-step", "#prev-step", "#play", "#scrubber"):
            box = page.locator(button).bounding_box()
            assert box is not None, button
            assert box["y"] >= 0 and box["y"] + box["height"] <= 844, (target, button)
            assert box["x"] >= 0 and box["x"] + box["width"] <= 390, (target, button)
        assert controls["height"] < 150  # the board keeps most of the screen
    # The last row of the board, brought just under the controls, is not hidden by them.
    page.evaluate(
        """() => {
          const row = document.querySelector('#board ol[data-row="3"]');
          const bar = document.getElementById('controls').getBoundingClientRect();
          window.scrollBy(0, row.getBoundingClientRect().top - bar.height - 4);
        }"""
    )
    controls = page.locator("#controls").bounding_box()
    row = page.locator('#board ol[data-row="3"]').bounding_box()
    assert controls is not None and row is not None
    assert controls["y"] >= 0 and controls["y"] + controls["height"] <= row["y"] + 1
    page.click("#next-step")
    assert position(page) == (1, 4, 3)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "phone-replay-sticky", full_page=False)


def test_a_fault_in_the_end_of_round_notice_shows_at_the_round_s_end(
    pages: Pages, live_server: LiveServer
) -> None:
    match_id = store(live_server, [SulksAtRoundEnd(), bots.make("random")], [None, None])
    page = pages.open(f"/matches/{match_id}#r1t10s2")
    wait_viewer(page)
    assert "Faults in the end-of-round notice: alpha@2 exception." in page.inner_text("#narration")
    cells = page.locator("#timeline .turn-cell")
    assert "fault" in (cells.nth(9).get_attribute("class") or "")
    assert "fault" not in (cells.nth(8).get_attribute("class") or "")
