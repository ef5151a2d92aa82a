"""The replay's data and its text view over plain HTTP (no JavaScript).

What a 6 nimmt player reads is in the served page itself: the heads of every row after every
turn and the rows at 5 cards (the danger slot), the hands as dealt, each fault on its turn with
its kind and what its fallback replaced, a forfeited seat's fallbacks, the cost of every row for
a "lowest" take, and the round's and the match's winners; the viewer's data block carries the
same for replay.js.  A bot's words (fault details) stay text, and its stderr never reaches the
page.  The pages run on SQLite and PostgreSQL (the ``api`` fixture).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers.api import Api
from helpers.web import Node, Seeded, parse_html, seed

from cow006 import Agent, BotFault, View, bots, play_match
from cow006.cards import heads_of
from cow006.log import FaultKind
from cow006_platform import db, results
from cow006_platform.models import MatchKind
from cow006_platform.web.replay import replay_data

HOSTILE = '</script><script>alert(1)</script><b onmouseover="x()">bold</b>' + "é" * 400


class Crashing(Agent):
    """Raises at every decision: three faults, then a forfeit."""

    def play(self, view: View) -> int:
        raise RuntimeError(HOSTILE)


class DiesAtTurnThree(Agent):
    """Plays its highest card, then reports a crash (a fatal fault) at the third turn."""

    def play(self, view: View) -> int:
        if view.round == 0 and view.turn == 2:
            raise BotFault(FaultKind.CRASH, "the bot process exited")
        return max(view.hand)


class SulksAtRoundEnd(Agent):
    """Plays well enough, but fails in the end-of-round notice (turn 10 in the log)."""

    def play(self, view: View) -> int:
        return min(view.hand)

    def on_round_end(self, result: dict[str, Any]) -> None:
        raise ValueError("no thanks")


class BadRows(Agent):
    """Plays its lowest card, names a row that does not exist, and fails as each round starts."""

    def play(self, view: View) -> int:
        return min(view.hand)

    def take_row(self, view: View) -> int:
        return 7

    def on_round_start(self, view: View) -> None:
        if view.round == 0:
            raise ValueError("not now")


class Highest(Agent):
    """Plays its highest card, and fails as round 1 starts: its cards stay its own."""

    def play(self, view: View) -> int:
        return max(view.hand)

    def on_round_start(self, view: View) -> None:
        if view.round == 0:
            raise ValueError("not now")


@pytest.fixture
def site(api: Api) -> tuple[Any, Seeded]:
    return api.client, seed(api.session_factory, matches=2)


def store(api: Api, s: Seeded, agents: list[Agent], stderr: list[str | None]) -> tuple[int, Any]:
    """A finished challenge between the first len(agents) versions, played by ``agents``."""
    n = len(agents)
    with db.session_scope(api.session_factory) as session:
        match = results.create_match(
            session, kind=MatchKind.challenge, version_ids=s.version_ids[:n], seed=5
        )
        match_id = match.id
        labels = [seat.version.label for seat in sorted(match.seats, key=lambda x: x.seat)]
    log = play_match(agents, seed=5, names=labels, agent_seeds=list(range(1, n + 1)))
    with db.session_scope(api.session_factory) as session:
        assert results.finish_match(session, match_id, log, stderr)
    return match_id, log


def text_of(node: Node) -> str:
    return " ".join(node.text().split())


def cells(row: Node) -> list[str]:
    return [text_of(c) for c in row.children if isinstance(c, Node)]


def test_the_viewer_data_has_hands_winners_faults_and_forfeits() -> None:
    log = play_match(
        [Crashing(), bots.make("random"), bots.make("safe")], seed=5, agent_seeds=[1, 2, 3]
    )
    data, text = replay_data(log)
    assert data["winners"] == [s for s, r in enumerate(log["ranks"]) if r == 1]
    assert data["scores"] == log["scores"]
    for rnd, logged, lines in zip(data["rounds"], log["rounds"], text, strict=True):
        assert rnd["hands"] == logged["hands"]
        least = min(logged["penalties"])
        assert rnd["winners"] == [s for s, p in enumerate(logged["penalties"]) if p == least]
        assert lines["winners"] == [log["players"][s]["agent"] for s in rnd["winners"]]
        for turn, line in zip(rnd["turns"], lines["turns"], strict=True):
            # The text view's row heads are the rows' after the turn, full at 5 cards.
            after = turn["steps"][-1]["rows"]
            assert line["heads"] == [{"heads": heads_of(r), "full": len(r) == 5} for r in after]
    turns = data["rounds"][0]["turns"]
    # Seat 0 faults on turns 1-3 (the third forfeits it), then plays fallbacks to the end.
    assert [[f["seat"] for f in t["faults"]] for t in turns[:4]] == [[0], [0], [0], []]
    assert all(f["kind"] == "exception" for t in turns[:3] for f in t["faults"])
    assert [t["forfeited"] for t in turns] == [[]] * 3 + [[0]] * 7
    assert all(t["forfeited"] == [0] for r in data["rounds"][1:] for t in r["turns"])
    # A fallback card is the lowest of the hand; the detail is the bot's words, cut short.
    for t, turn in enumerate(turns[:3]):
        fault = turn["faults"][0]
        takes = log["rounds"][0]["turns"][t]["takes"]
        lowest_take = any(k["seat"] == 0 and k["reason"] == "lowest" for k in takes)
        assert fault["fallback"] == ("decision" if lowest_take else "card")
        assert len(fault["detail"]) == 300 and fault["detail"].startswith("RuntimeError: </script>")


def test_a_fatal_fault_forfeits_at_once_and_a_round_end_fault_comes_after_the_turns() -> None:
    log = play_match(
        [DiesAtTurnThree(), SulksAtRoundEnd(), bots.make("safe")], seed=9, agent_seeds=[1, 2, 3]
    )
    data, text = replay_data(log)
    turns = data["rounds"][0]["turns"]
    assert [f["kind"] for f in turns[2]["faults"]] == ["crash"]
    assert [t["forfeited"] for t in turns[:4]] == [[], [], [], [0]]
    # Seat 1 fails in round 1's end-of-round notice: filed after its last turn.
    late = data["rounds"][0]["late_faults"]
    assert [(f["seat"], f["kind"]) for f in late] == [(1, "exception")]
    assert text[0]["late_faults"][0]["player"] == log["players"][1]["agent"]


def test_what_a_fault_replaced_is_said_as_far_as_the_log_tells() -> None:
    log = play_match([BadRows(), Highest(), bots.make("safe")], seed=3, agent_seeds=[1, 2, 3])
    data, _ = replay_data(log)
    marks = {
        (r, t, f["seat"], f["kind"]): f["fallback"]
        for r, rnd in enumerate(data["rounds"])
        for t, turn in enumerate(rnd["turns"])
        for f in turn["faults"]
    }
    # A row outside 0..3 is a fallback row, always.
    rows = [v for (r, t, seat, kind), v in marks.items() if kind == "illegal_row"]
    assert rows and set(rows) == {"row"}
    # Failing at the round's start, then playing its highest card: the card was its own.
    assert marks[(0, 0, 1, "exception")] == "none"
    first = log["rounds"][0]["turns"][0]["cards"][0]
    hand = log["rounds"][0]["hands"][0]
    assert first == min(hand)  # seat 0's own lowest card: the log cannot tell it from a fallback
    assert marks[(0, 0, 0, "exception")] in ("card", "decision")


def test_the_text_view_carries_heads_full_rows_faults_costs_and_winners(
    api: Api, site: tuple[Any, Seeded]
) -> None:
    client, s = site
    stderr = ["r1t2 secret thinking <script>x</script>\n", None, None]
    match_id, log = store(api, s, [Crashing(), bots.make("random"), bots.make("safe")], stderr)
    r = client.get(f"/matches/{match_id}")
    assert r.status_code == 200
    assert "secret thinking" not in r.text  # stderr is the owner's: replay.js fetches it
    # The bot's words are text: nothing it wrote opens a tag or closes the data block.
    assert "<b onmouseover" not in r.text and "<script>alert(1)" not in r.text
    assert r.text.count("</script>") == r.text.count("<script")
    doc = parse_html(r.text)
    data = json.loads(doc.by_id("match-replay").text())
    detail = data["rounds"][0]["turns"][0]["faults"][0]["detail"]
    assert detail.startswith("RuntimeError: </script>")
    names = [p["agent"] for p in log["players"]]
    lowest_seen = 0
    for r_i, rnd in enumerate(log["rounds"], start=1):
        least = min(rnd["penalties"])
        won = [names[x] for x, p in enumerate(rnd["penalties"]) if p == least]
        details = doc.by_id(f"text-r{r_i}t1").parent
        while details is not None and details.tag != "details":
            details = details.parent
        assert details is not None
        summary = text_of(details.find("summary"))
        assert summary.endswith("won by " + " and ".join(won))
        dealt = text_of(doc.by_id(f"hands-r{r_i}"))
        for seat, hand in enumerate(rnd["hands"]):
            assert f"{names[seat]} {' '.join(map(str, hand))}" in dealt
        rows = rnd["rows"]
        for t_i, turn in enumerate(rnd["turns"], start=1):
            row = cells(doc.by_id(f"text-r{r_i}t{t_i}"))
            n = len(names)
            faults_cell, heads_cell, takes_cell = row[1 + n], row[2 + n], row[3 + n]
            assert heads_cell == " | ".join(
                f"{heads_of(x)}{' (full)' if len(x) == 5 else ''}" for x in turn["rows"]
            )
            mine = [f for f in log["faults"] if (f["round"], f["turn"]) == (r_i - 1, t_i - 1)]
            if mine:
                assert faults_cell.startswith(f"{names[0]}: exception, fallback card")
            elif r_i == 1 and t_i <= 3:
                raise AssertionError("seat 0 faulted on turns 1-3")
            else:
                assert faults_cell == f"{names[0]}: forfeited, fallback card"
            for take in turn["takes"]:
                if take["reason"] == "lowest":
                    costs = ", ".join(str(heads_of(x)) for x in rows)
                    cheapest = heads_of(rows[take["row"]]) == min(heads_of(x) for x in rows)
                    verdict = "the cheapest" if cheapest else "not the cheapest"
                    assert f"the rows cost {costs}: {verdict}" in takes_cell
                    # One "lowest" take a turn at most: the turn's lowest card's.
                    assert cheapest != ("not the cheapest" in takes_cell)
                    lowest_seen += 1
            rows = turn["rows"]
    assert lowest_seen  # the faulting seat's lowest cards make "lowest" takes
    champions = [names[x] for x, rank in enumerate(log["ranks"]) if rank == 1]
    winner = text_of(doc.by_id("match-winner"))
    assert winner.startswith("Winner" if len(champions) == 1 else "Winners")
    assert " and ".join(champions) in winner
    assert f"with {min(log['scores'])} heads" in winner


def test_the_board_as_served_shows_each_row_s_heads(site: tuple[Any, Seeded]) -> None:
    client, s = site
    match_id = s.match_ids[0]
    log = client.get(f"/api/matches/{match_id}/log").json()
    doc = parse_html(client.get(f"/matches/{match_id}").text)
    for i, row in enumerate(log["rounds"][0]["rows"]):
        wrap = doc.by_id("board").find("div", data_row_wrap=str(i))
        assert wrap.find("span", class_="row-heads").get("data-row-heads") == str(heads_of(row))
        label = wrap.find("ol").get("aria-label") or ""
        h = heads_of(row)
        assert label == f"Row {i + 1}: 1 card, {h} head{'s' if h > 1 else ''}"
    # What needs the script is hidden without it; the note on stderr's turn marks is there.
    for ident in ("controls", "replay-options", "hands", "turn-stderr"):
        assert "hidden" in doc.by_id(ident).attrs
    assert "no turn marks" in text_of(doc.by_id("stderr-note"))
