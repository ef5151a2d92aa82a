"""Every worked example of the Russian step-by-step guide (source-guide-ru.txt) as a test.

Each example is set up as an explicit position (``start_round(..., position=True)``) with
explicit decisions, then played through the engine exactly as a match would play it.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence

import pytest

from cow006 import engine
from cow006.cards import HEADS, TOTAL_HEADS, heads, heads_of
from cow006.engine import State
from cow006.log import Take

Rows = list[list[int]]


class Chooser:
    """A ``choose_row`` callback that records every call with the rows it saw."""

    def __init__(self, state: State, choices: dict[int, int] | None = None) -> None:
        self.state = state
        self.choices = choices or {}
        self.calls: list[tuple[int, int, Rows]] = []

    def __call__(self, seat: int, card: int) -> int:
        self.calls.append((seat, card, copy.deepcopy(self.state.rows)))
        if seat not in self.choices:
            raise AssertionError(f"seat {seat} was asked to choose a row for {card}")
        return self.choices[seat]


def one_turn(
    rows: Sequence[Sequence[int]],
    cards: Sequence[int],
    choices: dict[int, int] | None = None,
    scores: Sequence[int] | None = None,
) -> tuple[State, list[Take], Chooser]:
    """Seat i holds only cards[i]; play that single turn on the given rows."""
    state = engine.new_match(len(cards), scores)
    engine.start_round(state, [[c] for c in cards], rows, position=True)
    chooser = Chooser(state, choices)
    takes = engine.play_turn(state, list(cards), chooser)
    assert state.round_over
    return state, takes, chooser


# -- "Suppose 31, 34 and 72 were revealed" -------------------------------------------------


def test_example_31_34_72_are_resolved_in_order_each_seeing_the_updated_rows() -> None:
    # 31 lengthens row 0 to five cards, so 34 must be its sixth; 72 then sees the new end 34.
    # Comparing all three with the ends before the reveal would put 34 fifth (no take) and
    # 72 after 29 as the sixth card.
    rows = [[10, 20, 25, 29], [80], [90], [100]]
    state, takes, chooser = one_turn(rows, [72, 34, 31])  # seats deliberately not in order
    assert chooser.calls == []
    assert takes == [
        {"seat": 1, "row": 0, "cards": [10, 20, 25, 29, 31], "reason": "sixth"},
    ]
    assert state.rows == [[34, 72], [80], [90], [100]]
    assert state.penalties == [0, 3 + 3 + 2 + 1 + 1, 0]
    assert state.piles == [[], [10, 20, 25, 29, 31], []]


def test_example_31_34_72_the_resolution_order_is_by_card_not_by_seat() -> None:
    rows = [[10, 20, 25, 29], [80], [90], [100]]
    by_seat_a, takes_a, _ = one_turn(rows, [31, 34, 72])
    by_seat_b, takes_b, _ = one_turn(rows, [72, 31, 34])
    assert by_seat_a.rows == by_seat_b.rows == [[34, 72], [80], [90], [100]]
    # The taker is always the seat that played 34.
    assert [t["seat"] for t in takes_a] == [1]
    assert [t["seat"] for t in takes_b] == [2]


# -- "Rows end 14, 36, 59 and 87. You place 62." -------------------------------------------


def test_example_62_goes_after_59_the_nearest_lower_end_not_87_nor_the_shortest_row() -> None:
    rows = [[14], [30, 36], [51, 53, 57, 59], [87]]  # the 59 row is the longest
    assert engine.target_row(rows, 62) == 2
    state, takes, _ = one_turn(rows, [62, 104])
    assert takes == []
    assert state.rows == [[14], [30, 36], [51, 53, 57, 59, 62], [87, 104]]


def test_example_62_goes_after_59_even_when_it_is_the_sixth_card_there() -> None:
    rows = [[14], [36], [50, 51, 53, 57, 59], [87]]
    state, takes, chooser = one_turn(rows, [62, 104])
    assert chooser.calls == []
    assert takes == [{"seat": 0, "row": 2, "cards": [50, 51, 53, 57, 59], "reason": "sixth"}]
    assert state.rows == [[14], [36], [62], [87, 104]]
    assert state.penalties == [3 + 1 + 1 + 1 + 1, 0]


# -- "The ends became 14, 36, 62 and 87, and 60 is next" -----------------------------------


def test_example_60_goes_after_36_although_59_lies_inside_the_row_ending_62() -> None:
    rows = [[14], [36], [59, 62], [87]]
    assert engine.target_row(rows, 60) == 1
    state, takes, _ = one_turn(rows, [60, 104])
    assert takes == []
    assert state.rows == [[14], [36, 60], [59, 62], [87, 104]]


# -- "When a card turns out to be the sixth" -----------------------------------------------


def test_example_row_14_18_21_26_29_card_31_takes_five_cards_for_five_heads() -> None:
    rows = [[14, 18, 21, 26, 29], [5], [40], [60]]  # other ends below 29 or above 31
    state, takes, _ = one_turn(rows, [31, 104])
    assert takes == [{"seat": 0, "row": 0, "cards": [14, 18, 21, 26, 29], "reason": "sixth"}]
    assert state.rows[0] == [31]  # 31 stays alone, it is not taken with the five
    assert state.piles[0] == [14, 18, 21, 26, 29]
    assert state.penalties == [5, 0]  # heads, not 14 + 18 + 21 + 26 + 29 = 108
    assert engine.finish_round(state) == [5, 0]
    assert state.scores == [5, 0]


def test_example_31_then_34_in_the_same_turn_34_follows_the_new_31_only_31_pays() -> None:
    rows = [[14, 18, 21, 26, 29], [5], [40], [60]]
    state, takes, _ = one_turn(rows, [34, 31])
    assert takes == [{"seat": 1, "row": 0, "cards": [14, 18, 21, 26, 29], "reason": "sixth"}]
    assert state.rows == [[31, 34], [5], [40], [60]]
    assert state.penalties == [0, 5]
    assert state.piles == [[], [14, 18, 21, 26, 29]]


def test_example_a_row_of_five_is_not_taken_until_a_sixth_card_must_go_there() -> None:
    state = engine.new_match(2)
    rows = [[14, 18, 21, 26, 29], [40], [50], [60]]
    engine.start_round(state, [[31, 42], [52, 61]], rows, position=True)
    never = Chooser(state)
    # Turn 1: 42 and 52 go elsewhere; the full row stays on the table untouched.
    assert engine.play_turn(state, [42, 52], never) == []
    assert state.rows == [[14, 18, 21, 26, 29], [40, 42], [50, 52], [60]]
    assert state.penalties == [0, 0]
    # Turn 2: 31 has to become its sixth card: only now is it taken.
    takes = engine.play_turn(state, [31, 61], never)
    assert takes == [{"seat": 0, "row": 0, "cards": [14, 18, 21, 26, 29], "reason": "sixth"}]
    assert state.rows == [[31], [40, 42], [50, 52], [60, 61]]
    assert state.penalties == [5, 0]


# -- "When the number is below every end" --------------------------------------------------


@pytest.mark.parametrize("chosen", [0, 1, 2, 3])
def test_example_card_8_below_every_end_its_player_may_take_any_row(chosen: int) -> None:
    rows = [[14], [20, 36], [50, 55, 59], [70, 80, 85, 87]]
    state, takes, chooser = one_turn(rows, [8, 104], {0: chosen})
    assert [(seat, card) for seat, card, _ in chooser.calls] == [(0, 8)]
    assert takes[0] == {"seat": 0, "row": chosen, "cards": rows[chosen], "reason": "lowest"}
    assert state.rows[chosen] == [8]  # the same index, 8 its only card
    for i in range(4):
        if i != chosen:
            assert state.rows[i][: len(rows[i])] == rows[i]
    assert state.penalties[0] == heads_of(rows[chosen])
    assert state.piles[0] == rows[chosen]


def test_example_the_choice_is_asked_when_8_is_resolved_and_it_changes_where_62_goes() -> None:
    rows = [[14], [36], [59], [87]]
    # 62 and 90 are still unplaced when the owner of 8 is asked.
    state, takes, chooser = one_turn(rows, [90, 8, 62], {1: 2})
    assert chooser.calls == [(1, 8, [[14], [36], [59], [87]])]
    assert takes == [{"seat": 1, "row": 2, "cards": [59], "reason": "lowest"}]
    # With the 59 row taken, the ends are 14, 36, 8, 87: 62 now goes after 36.
    assert state.rows == [[14], [36, 62], [8], [87, 90]]


def test_example_after_a_lower_card_of_the_same_turn_8_is_no_longer_below_every_end() -> None:
    rows = [[14], [36], [59], [87]]
    state, takes, chooser = one_turn(rows, [8, 5], {1: 3})
    # Only the lowest card of the turn gets a choice; 8 then follows the new end 5.
    assert chooser.calls == [(1, 5, [[14], [36], [59], [87]])]
    assert takes == [{"seat": 1, "row": 3, "cards": [87], "reason": "lowest"}]
    assert state.rows == [[14], [36], [59], [5, 8]]
    assert state.penalties == [0, 1]


def test_example_taking_14_18_costs_2_heads_and_10_22_55_costs_15() -> None:
    rows = [[14, 18], [10, 22, 55], [60, 66], [77, 88]]  # 2, 15, 8 and 10 heads
    cheap, _, _ = one_turn(rows, [8, 104], {0: 0})
    dear, _, _ = one_turn(rows, [8, 104], {0: 1})
    assert cheap.penalties[0] == 2
    assert dear.penalties[0] == 3 + 5 + 7 == 15
    # The cheaper row is the shorter one here, but the deciding check is the heads:
    # a row of four plain cards is cheaper than a row of one card 88.
    assert engine.cheapest_row(rows) == 0
    assert engine.cheapest_row([[10, 22, 55], [1, 2, 3, 4], [59], [87]]) == 2
    assert engine.cheapest_row([[10, 22, 55], [1, 2, 3, 4], [60, 70], [88]]) == 1


def test_example_8_stays_on_the_table_and_the_next_card_can_follow_it() -> None:
    rows = [[14, 18], [10, 22, 55], [59], [87]]
    state, takes, _ = one_turn(rows, [12, 8], {1: 0})
    assert [t["seat"] for t in takes] == [1]
    assert state.rows == [[8, 12], [10, 22, 55], [59], [87]]
    assert state.penalties == [0, 2]


def test_example_the_row_choice_is_not_extended_to_the_normal_case() -> None:
    # 29 is below 31, so 31 must follow it and take five cards, although taking a one-card
    # row would cost less: no choice is asked (the Chooser fails if it is).
    rows = [[14, 18, 21, 26, 29], [40], [50], [60]]
    state, takes, chooser = one_turn(rows, [31, 104])
    assert chooser.calls == []
    assert takes == [{"seat": 0, "row": 0, "cards": [14, 18, 21, 26, 29], "reason": "sixth"}]
    assert state.rows[0] == [31]


# -- "How to count the penalty" ------------------------------------------------------------


def test_example_pile_10_22_55_scores_15_and_card_14_adds_one() -> None:
    assert [heads(10), heads(22), heads(55)] == [3, 5, 7]
    assert heads_of([10, 22, 55]) == 15
    assert heads_of([10, 22, 55, 14]) == 16  # not 14 more
    rows = [[10, 22, 55], [59], [60, 62], [87]]
    state, _, _ = one_turn(rows, [8, 14], {0: 0})  # 14 then follows 8, no take
    assert state.penalties == [15, 0]
    assert engine.finish_round(state) == [15, 0]
    assert state.scores == [15, 0]


def test_example_heads_of_every_card_in_the_deck() -> None:
    doubles = {11, 22, 33, 44, 66, 77, 88, 99}
    tens = set(range(10, 101, 10))
    fives = set(range(5, 101, 10)) - {55}
    for card in range(1, 105):
        if card == 55:
            expected = 7
        elif card in doubles:
            expected = 5
        elif card in tens:
            expected = 3
        elif card in fives:
            expected = 2
        else:
            expected = 1
        assert heads(card) == HEADS[card] == expected, card
    assert len(fives) == 9
    assert 7 + 5 * len(doubles) + 3 * len(tens) + 2 * len(fives) + (104 - 28) == 171
    assert TOTAL_HEADS == sum(heads(c) for c in range(1, 105)) == 171


# -- "For a new round collect all 104 cards" -----------------------------------------------


def test_example_a_new_round_reshuffles_all_104_cards() -> None:
    rng = random.Random(6)
    # With ten players every deal uses the whole deck, round after round.
    for _ in range(3):
        hands, rows = engine.deal(rng, 10)
        assert sorted([c for h in hands for c in h] + [r[0] for r in rows]) == list(range(1, 105))
    # A round played to its end leaves cards in rows and piles; the next deal may use them.
    state = engine.new_match(2)
    hands, rows = engine.deal(rng, 2)
    engine.start_round(state, hands, rows)
    while not state.round_over:
        engine.play_turn(state, [h[0] for h in state.hands], lambda s, c: 0)
    engine.finish_round(state)
    used = {c for r in state.rows for c in r} | {c for p in state.piles for c in p}
    assert len(used) == 24
    rest = set(range(1, 105)) - used
    next_hands = [sorted(used)[:10], sorted(rest)[:10]]
    next_rows = [[c] for c in sorted(used)[10:14]]
    engine.start_round(state, next_hands, next_rows)  # cards of the last table are fine
    assert state.piles == [[], []] and state.penalties == [0, 0]
    assert state.rows == next_rows and state.round == 1 and state.turn == 0
    # The rounds of a match are dealt from the whole deck: over a few seeds, the cards of
    # round 1 are drawn from the old table and piles as well as from the old rest.
    from_used = from_rest = 0
    for seed in range(5):
        r = random.Random(seed)
        first = engine.deal(r, 2)
        second = engine.deal(r, 2)
        old = {c for h in first[0] for c in h} | {row[0] for row in first[1]}
        new = {c for h in second[0] for c in h} | {row[0] for row in second[1]}
        from_used += len(new & old)
        from_rest += len(new - old)
    assert from_used > 0 and from_rest > 0


# -- "The game ends after the round in which someone reached 66" ---------------------------


def _round_penalties(scores: list[int]) -> State:
    """Play one fixed 2-player round (lowest card each turn, first row when asked)."""
    state = engine.new_match(2, scores)
    hands = [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [11, 12, 13, 14, 15, 16, 17, 18, 19, 20]]
    engine.start_round(state, hands, [[30], [40], [50], [60]])
    # Turn 0: 1 is below every end, seat 0 takes [60] (3 heads); then 11 follows 1.
    engine.play_turn(state, [1, 11], lambda seat, card: 3)
    assert state.penalties == [3, 0]
    while not state.round_over:
        assert not state.match_over  # a total crossing 66 mid-round does not stop the round
        engine.play_turn(state, [min(h) for h in state.hands], lambda seat, card: 0)
    return state


def test_example_the_game_ends_after_the_round_in_which_a_total_reaches_66() -> None:
    probe = _round_penalties([0, 0])
    engine.finish_round(probe)
    p0, p1 = probe.scores
    assert p0 >= 3 and p1 < 66
    reaches = _round_penalties([66 - p0, 0])
    assert reaches.turn == 10 and reaches.hands == [[], []]  # all ten turns were played
    engine.finish_round(reaches)
    assert reaches.scores[0] == 66
    assert reaches.match_over
    short = _round_penalties([65 - p0, 0])
    engine.finish_round(short)
    assert short.scores[0] == 65
    assert not short.match_over  # 65 is not enough: another round follows
    engine.start_round(short, *engine.deal(random.Random(1), 2))
    assert short.round == 1


def test_example_the_lowest_total_wins_and_equal_totals_share_a_place() -> None:
    assert engine.ranks([30, 12, 30, 70]) == [2, 1, 2, 4]
    assert engine.ranks([66, 66]) == [1, 1]
    assert engine.ranks([5, 9, 9, 9, 2]) == [2, 3, 3, 3, 1]


# -- "One reveal from start to end" --------------------------------------------------------


def test_full_example_ends_14_36_59_87_cards_8_62_90() -> None:
    rows = [[14], [36], [59], [87]]
    state, takes, chooser = one_turn(rows, [8, 62, 90], {0: 0})
    assert chooser.calls == [(0, 8, [[14], [36], [59], [87]])]
    assert takes == [{"seat": 0, "row": 0, "cards": [14], "reason": "lowest"}]
    # Ends after 8: 8, 36, 59, 87; 62 follows 59, 90 follows 87.
    assert state.rows == [[8], [36], [59, 62], [87, 90]]
    assert state.penalties == [1, 0, 0]


def test_full_example_62_or_90_takes_a_row_only_as_its_sixth_card() -> None:
    rows = [[14], [36], [40, 45, 50, 57, 59], [70, 75, 80, 87]]
    state, takes, _ = one_turn(rows, [90, 62, 8], {2: 0})
    assert takes == [
        {"seat": 2, "row": 0, "cards": [14], "reason": "lowest"},
        {"seat": 1, "row": 2, "cards": [40, 45, 50, 57, 59], "reason": "sixth"},
    ]
    assert state.rows == [[8], [36], [62], [70, 75, 80, 87, 90]]  # 90 is only the fifth
    assert state.penalties == [0, 3 + 2 + 3 + 1 + 1, 1]
