"""What a seat sees: its own hand and the public table, never another hand or the undealt
cards; take_row views mid-turn; the helpers of View; the contract example agent."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from cow006 import Agent, MatchInfo, View, engine, play_match
from cow006._view import observe
from cow006.cards import heads_of

Log = dict[str, Any]
DECK = set(range(1, 105))
VIEW_KEYS = {
    "seat",
    "hand",
    "rows",
    "scores",
    "penalties",
    "revealed",
    "starters",
    "round",
    "turn",
    "n_players",
    "time_left",
}


class Recorder(Agent):
    """A random agent that keeps every view it is given, with its answer."""

    def __init__(self) -> None:
        self.rng = random.Random(0)
        self.seen: list[tuple[str, View, int | None]] = []

    def on_match_start(self, info: MatchInfo) -> None:
        self.rng = random.Random(info.seed)

    def on_round_start(self, view: View) -> None:
        self.seen.append(("round_start", view, None))

    def play(self, view: View) -> int:
        card = self.rng.choice(view.hand)
        self.seen.append(("play", view, card))
        return card

    def take_row(self, view: View) -> int:
        row = self.rng.randrange(4)
        self.seen.append(("take_row", view, row))
        return row


def hands_at(rnd: dict[str, Any], turns_done: int) -> list[set[int]]:
    """Every seat's hand after ``turns_done`` turns of a logged round."""
    hands = [set(h) for h in rnd["hands"]]
    for turn in rnd["turns"][:turns_done]:
        for seat, card in enumerate(turn["cards"]):
            hands[seat].discard(card)
    return hands


def check_view(log: Log, kind: str, view: View, answer: int | None) -> None:
    seat, r, t = view.seat, view.round, view.turn
    rnd = log["rounds"][r]
    mid_turn = kind == "take_row"
    hands = hands_at(rnd, t + 1 if mid_turn else t)
    dealt = {c for h in rnd["hands"] for c in h} | {row[0] for row in rnd["rows"]}
    hidden = set().union(*(h for s, h in enumerate(hands) if s != seat)) | (DECK - dealt)

    # Only this seat's own hand, and the public table.
    assert view.hand == tuple(sorted(hands[seat]))
    rows_before = rnd["rows"] if t == 0 else rnd["turns"][t - 1]["rows"]
    assert [list(row) for row in view.rows] == rows_before
    assert view.revealed == tuple(tuple(turn["cards"]) for turn in rnd["turns"][:t])
    assert view.starters == tuple(row[0] for row in rnd["rows"])
    assert view.scores == tuple(
        sum(prev["penalties"][s] for prev in log["rounds"][:r]) for s in range(view.n_players)
    )
    assert view.penalties == tuple(
        sum(
            heads_of(tk["cards"])
            for turn in rnd["turns"][:t]
            for tk in turn["takes"]
            if tk["seat"] == s
        )
        for s in range(view.n_players)
    )
    visible = set(view.hand) | set(view.starters) | {c for row in view.rows for c in row}
    visible |= {c for turn in view.revealed for c in turn} | set(view.current or ())
    assert visible.isdisjoint(hidden)
    assert view.unseen() == sorted(hidden)
    assert view.seen() == DECK - hidden
    assert set(view.to_dict()) == (VIEW_KEYS | {"card", "current"} if mid_turn else VIEW_KEYS)

    if mid_turn:
        turn = rnd["turns"][t]
        assert view.card == turn["cards"][seat] and view.card not in view.hand
        assert view.current == tuple(turn["cards"])
        # Asked only below every row end, which only the lowest card of a turn can be.
        assert view.card == min(view.current)
        assert all(view.card < end for end in view.row_ends)
        assert answer is not None
        assert {
            "seat": seat,
            "row": answer,
            "cards": list(view.rows[answer]),
            "reason": "lowest",
        } in turn["takes"]
    else:
        assert view.card is None and view.current is None
        if kind == "play":
            assert rnd["turns"][t]["cards"][seat] == answer


@pytest.mark.parametrize(("n", "seed"), [(2, 1), (3, 7), (5, 11), (10, 3), (10, 4)])
def test_views_show_only_the_own_hand_and_the_public_table(n: int, seed: int) -> None:
    agents = [Recorder() for _ in range(n)]
    log = play_match(agents, seed=seed)
    assert log["faults"] == []
    kinds = set()
    for seat, agent in enumerate(agents):
        for kind, view, answer in agent.seen:
            assert view.seat == seat and view.n_players == n
            check_view(log, kind, view, answer)
            kinds.add(kind)
    assert kinds == {"round_start", "play", "take_row"}
    turns = sum(len(rnd["turns"]) for rnd in log["rounds"])
    assert sum(k == "play" for a in agents for k, _, _ in a.seen) == n * turns


def test_a_take_row_view_shows_the_rows_when_the_card_is_resolved() -> None:
    # Seat 1 plays 8 below every end; 62 and 90 of the same turn are placed after its choice.
    class Low(Agent):
        def __init__(self) -> None:
            self.views: list[View] = []

        def play(self, view: View) -> int:
            return min(view.hand)

        def take_row(self, view: View) -> int:
            self.views.append(view)
            return 2

    class High(Agent):
        def play(self, view: View) -> int:
            return max(view.hand)

    low = Low()
    hands = [
        [62, 1, 2, 3, 4, 5, 6, 7, 9, 10],
        [8, 11, 12, 13, 15, 16, 17, 18, 19, 20],
        [90, 21, 22, 23, 24, 25, 26, 27, 28, 29],
    ]
    deal = (hands, [[14], [36], [59], [87]])
    log = play_match([High(), low, High()], seed=5, deals=[deal])
    view = low.views[0]
    assert (view.round, view.turn, view.card) == (0, 0, 8)
    assert view.current == (62, 8, 90)
    assert view.rows == ((14,), (36,), (59,), (87,))
    assert view.hand == (11, 12, 13, 15, 16, 17, 18, 19, 20)
    assert view.revealed == ()
    turn = log["rounds"][0]["turns"][0]
    assert turn["takes"] == [{"seat": 1, "row": 2, "cards": [59], "reason": "lowest"}]
    assert turn["rows"] == [[14], [36, 62], [8], [87, 90]]


# -- observe and the View helpers -------------------------------------------------------------


@pytest.fixture
def state() -> engine.State:
    st = engine.new_match(3, [12, 0, 40])
    engine.start_round(
        st,
        [[5, 60, 70], [8, 61, 71], [3, 62, 72]],
        [[14, 18], [10, 22, 55], [59], [87]],
        position=True,
    )
    return st


def test_observe_gives_one_seat_its_own_hand(state: engine.State) -> None:
    view = observe(state, 1, (14, 10, 59, 87))
    assert view.hand == (8, 61, 71)
    assert view.seat == 1 and view.my_score == 0 and view.scores == (12, 0, 40)
    assert view.rows == ((14, 18), (10, 22, 55), (59,), (87,))
    assert view.card is None and view.current is None
    assert isinstance(view.hand, tuple) and all(isinstance(r, tuple) for r in view.rows)
    assert view.unseen() == sorted(DECK - {8, 61, 71, 14, 18, 10, 22, 55, 59, 87})


def test_observe_mid_turn_shows_the_current_cards_apart_from_the_revealed(
    state: engine.State,
) -> None:
    engine.play_turn(state, [60, 61, 62], lambda seat, card: 0)
    engine.reveal(state, [5, 8, 3])
    view = observe(state, 2, (14, 10, 59, 87), card=3)
    assert view.card == 3 and view.current == (5, 8, 3)
    assert view.revealed == ((60, 61, 62),)
    assert view.hand == (72,)
    assert 5 in view.seen() and 70 in view.unseen() and 71 in view.unseen()
    d = view.to_dict()
    assert d["card"] == 3 and d["current"] == [5, 8, 3]


def test_row_heads_works_with_and_without_a_row(state: engine.State) -> None:
    view = observe(state, 0, ())
    assert view.row_heads() == [2, 15, 1, 1]
    assert [view.row_heads(i) for i in range(4)] == [2, 15, 1, 1]
    assert min(range(4), key=view.row_heads) == 2
    assert view.cheapest_row() == 2 == engine.cheapest_row(state.rows)
    assert view.row_ends == (18, 55, 59, 87)


def test_target_row_and_simulate_follow_the_rules(state: engine.State) -> None:
    view = observe(state, 0, ())
    for card in range(1, 105):
        assert view.target_row(card) == engine.target_row(state.rows, card)
    assert view.simulate(60) == (2, 0, ((14, 18), (10, 22, 55), (59, 60), (87,)))
    assert view.simulate(5) == (2, 0 + 1, ((14, 18), (10, 22, 55), (5,), (87,)))
    assert view.simulate(5, row_choice=1) == (1, 15, ((14, 18), (5,), (59,), (87,)))
    full = View.from_dict({**view.to_dict(), "rows": [[1, 2, 3, 4, 6], [20], [30], [40]]})
    assert full.simulate(7) == (0, 5 + 0, ((7,), (20,), (30,), (40,)))
    assert view.rows == ((14, 18), (10, 22, 55), (59,), (87,))  # simulate changes nothing


def test_a_view_survives_its_wire_form(state: engine.State) -> None:
    engine.reveal(state, [5, 8, 3])
    view = observe(state, 2, (14, 10, 59, 87), time_left=1.5, card=3)
    d = json.loads(json.dumps(view.to_dict()))
    again = View.from_dict(d)
    assert again.to_dict() == view.to_dict()
    assert (again.card, again.current, again.time_left) == (3, (5, 8, 3), 1.5)
    plain = observe(state, 0, ())
    assert View.from_dict(plain.to_dict()).to_dict() == plain.to_dict()
    assert "card" not in plain.to_dict()


# -- the contract example of the issue --------------------------------------------------------


class Bot(Agent):
    def play(self, view):  # return one card from view.hand
        return max(view.hand)

    def take_row(self, view):  # called only when your card is below every row end; return 0..3
        return min(range(4), key=view.row_heads)


def test_the_contract_example_agent_plays_whole_matches() -> None:
    lowest_takes = 0
    for seed in range(6):
        log = play_match([Bot(), Bot(), Bot()], seed=seed)
        assert log["faults"] == [] and log["forfeited"] == []
        for rnd in log["rounds"]:
            for t, turn in enumerate(rnd["turns"]):
                hands = hands_at(rnd, t)
                assert turn["cards"] == [max(h) for h in hands]
                before = rnd["rows"] if t == 0 else rnd["turns"][t - 1]["rows"]
                for take in turn["takes"]:
                    if take["reason"] == "lowest":
                        lowest_takes += 1
                        costs = [heads_of(row) for row in before]
                        assert take["row"] == costs.index(min(costs))
    assert lowest_takes > 0
