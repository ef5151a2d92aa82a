"""Unit tests of the pure engine: set-up, checks, placement, turns, scoring and ranks."""

from __future__ import annotations

import random
from typing import Any

import pytest

from cow006 import CardNotInHandError, InvalidRowError, SetupError, engine
from cow006.cards import HAND_SIZE


def never(seat: int, card: int) -> int:
    raise AssertionError(f"no row choice expected (seat {seat}, card {card})")


def started(
    hands: list[list[int]], rows: list[list[int]], *, position: bool = True
) -> engine.State:
    state = engine.new_match(len(hands))
    engine.start_round(state, hands, rows, position=position)
    return state


# -- set-up -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 11, 2.0, True, "3"])
def test_new_match_rejects_a_bad_number_of_players(n: Any) -> None:
    with pytest.raises(SetupError, match="2 to 10 players"):
        engine.new_match(n)


def test_new_match_starts_between_rounds_with_zero_totals() -> None:
    state = engine.new_match(4)
    assert state.scores == [0, 0, 0, 0]
    assert state.round == -1
    assert state.round_over and not state.match_over
    with pytest.raises(SetupError, match="round is over"):
        engine.reveal(state, [1, 2, 3, 4])
    assert engine.new_match(2, [10, 20]).scores == [10, 20]
    with pytest.raises(SetupError, match="3 scores given for 2 players"):
        engine.new_match(2, [1, 2, 3])


@pytest.mark.parametrize("n", range(2, 11))
def test_deal_gives_ten_sorted_cards_per_seat_and_four_one_card_rows(n: int) -> None:
    hands, rows = engine.deal(random.Random(n), n)
    assert len(hands) == n and all(len(h) == HAND_SIZE for h in hands)
    assert all(h == sorted(h) for h in hands)
    assert len(rows) == 4 and all(len(r) == 1 for r in rows)
    dealt = [c for h in hands for c in h] + [r[0] for r in rows]
    assert len(set(dealt)) == len(dealt) == 10 * n + 4
    assert set(dealt) <= set(range(1, 105))


def test_deal_depends_only_on_the_rng() -> None:
    assert engine.deal(random.Random(42), 5) == engine.deal(random.Random(42), 5)
    assert engine.deal(random.Random(42), 5) != engine.deal(random.Random(43), 5)


def test_deal_is_not_biased_towards_any_card() -> None:
    rng = random.Random(0)
    counts = [0] * 105
    ordered_rows = 0
    for _ in range(400):
        hands, rows = engine.deal(rng, 2)
        for c in [c for h in hands for c in h] + [r[0] for r in rows]:
            counts[c] += 1
        ordered_rows += rows == sorted(rows)
    # Each card is dealt with probability 24/104: about 92 times in 400 deals.
    assert min(counts[1:]) > 50 and max(counts[1:]) < 140
    # The four starters are in shuffled order: ascending in about 1 deal of 24.
    assert 2 < ordered_rows < 50


def test_start_round_sorts_hands_and_resets_the_round() -> None:
    state = engine.new_match(2)
    hands = [[20, 3, 9, 1, 2, 4, 5, 6, 7, 8], [11, 12, 13, 14, 15, 16, 17, 18, 19, 10]]
    engine.start_round(state, hands, [[30], [40], [50], [60]])
    assert state.hands[0] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 20]
    assert state.round == 0 and state.turn == 0 and not state.round_over
    assert state.piles == [[], []] and state.penalties == [0, 0] and state.revealed == []
    assert hands[0][0] == 20  # the caller's lists are not changed


@pytest.mark.parametrize(
    ("hands", "rows", "message"),
    [
        ([list(range(1, 11))], [[30], [40], [50], [60]], "1 hands given for 2 players"),
        ([list(range(1, 11)), list(range(11, 21))], [[30], [40], [50]], "3 rows given"),
        ([list(range(1, 10)), list(range(11, 21))], [[30], [40], [50], [60]], "9 cards"),
        ([list(range(1, 11)), list(range(10, 20))], [[30], [40], [50], [60]], "twice"),
        ([list(range(1, 11)), list(range(11, 21))], [[30], [40], [50], [10]], "twice"),
        ([list(range(1, 11)), list(range(11, 21))], [[30, 31], [40], [50], [60]], "1 to 1"),
        ([list(range(1, 11)), list(range(11, 21))], [[30], [], [50], [60]], "row 1 has 0"),
        ([list(range(1, 11)), [*range(11, 20), 105]], [[30], [40], [50], [60]], "105"),
        ([list(range(1, 11)), [*range(11, 20), 0]], [[30], [40], [50], [60]], "not a card"),
        ([list(range(1, 11)), [*range(11, 20), True]], [[30], [40], [50], [60]], "True"),
        ([list(range(1, 11)), list(range(11, 21))], [[30.0], [40], [50], [60]], "30.0"),
    ],
)
def test_start_round_rejects_impossible_deals(
    hands: list[list[Any]], rows: list[list[Any]], message: str
) -> None:
    state = engine.new_match(2)
    with pytest.raises(SetupError, match=message):
        engine.start_round(state, hands, rows)
    assert state.round == -1  # nothing was changed


def test_start_round_with_position_accepts_partial_hands_and_longer_rows() -> None:
    state = started([[7, 50], [8, 60]], [[1, 2, 3, 4, 5], [20], [30, 31], [40]])
    assert state.turn == HAND_SIZE - 2
    engine.play_turn(state, [50, 60], never)
    assert not state.round_over
    engine.play_turn(state, [7, 8], never)
    assert state.round_over


@pytest.mark.parametrize(
    ("hands", "rows", "message"),
    [
        ([[7, 50], [8]], [[1], [20], [30], [40]], "same number of cards"),
        ([[], []], [[1], [20], [30], [40]], "same number of cards"),
        ([list(range(50, 61)), list(range(61, 72))], [[1], [20], [30], [40]], "same number"),
        ([[7], [8]], [[1, 2, 3, 4, 5, 6], [20], [30], [40]], "1 to 5"),
        ([[7], [8]], [[1, 3, 2], [20], [30], [40]], "not ascending"),
        ([[7], [8]], [[1, 3, 3], [20], [30], [40]], "not ascending"),
        ([[7], [8]], [[1, 7], [20], [30], [40]], "twice"),
    ],
)
def test_start_round_with_position_still_rejects_impossible_positions(
    hands: list[list[int]], rows: list[list[int]], message: str
) -> None:
    with pytest.raises(SetupError, match=message):
        started(hands, rows)


# -- checks -------------------------------------------------------------------------------


def test_check_card_accepts_only_an_int_in_the_hand() -> None:
    state = started([[1, 12], [13, 14]], [[20], [30], [40], [50]])
    assert engine.check_card(state, 0, 12) == 12
    for bad in (13, 99, 0, True, 12.0, "12", None, [12]):
        with pytest.raises(CardNotInHandError) as info:
            engine.check_card(state, 0, bad)
        assert info.value.kind == "illegal_card" and info.value.seat == 0
    # True == 1 and 1 is in the hand: a bool is still not a card.
    with pytest.raises(CardNotInHandError):
        engine.check_card(state, 0, True)


def test_check_row_accepts_only_an_int_0_to_3() -> None:
    assert [engine.check_row(0, r) for r in range(4)] == [0, 1, 2, 3]
    for bad in (-1, 4, 7, True, False, 1.0, "1", None):
        with pytest.raises(InvalidRowError) as info:
            engine.check_row(2, bad)
        assert info.value.kind == "illegal_row" and info.value.seat == 2


def test_reveal_rejects_a_bad_card_without_changing_any_hand() -> None:
    state = started([[1, 12], [13, 14]], [[20], [30], [40], [50]])
    with pytest.raises(CardNotInHandError, match="seat 1"):
        engine.reveal(state, [12, 12])
    with pytest.raises(SetupError, match="3 cards revealed"):
        engine.reveal(state, [1, 13, 14])
    assert state.hands == [[1, 12], [13, 14]] and state.revealed == []


def test_reveal_returns_seats_in_ascending_card_order() -> None:
    state = started([[50], [10], [30]], [[20], [25], [40], [60]])
    assert engine.reveal(state, [50, 10, 30]) == [1, 2, 0]
    assert state.hands == [[], [], []]
    assert state.revealed == [[50, 10, 30]]


# -- placement ----------------------------------------------------------------------------


def test_target_row_is_the_largest_end_below_the_card() -> None:
    rows = [[14], [20, 36], [59], [87]]
    assert engine.target_row(rows, 8) == -1
    assert engine.target_row(rows, 13) == -1
    assert engine.target_row(rows, 15) == 0
    assert engine.target_row(rows, 37) == 1
    assert engine.target_row(rows, 86) == 2
    assert engine.target_row(rows, 104) == 3
    assert engine.target_row([[1, 90], [2], [3], [4]], 50) == 3  # only the ends count


def test_ends_below_counts_the_ends_below_a_card() -> None:
    ends = [14, 36, 59, 87]
    assert [engine.ends_below(ends, c) for c in (8, 15, 37, 86, 88, 104)] == [0, 1, 2, 3, 4, 4]


def test_lay_joins_the_nearest_lower_end_and_keeps_the_ends_in_order() -> None:
    ends, sizes, heads, by_end = engine.rule_rows([[30], [10, 20], [40], [5]])
    assert (ends, sizes, heads, by_end) == (
        [5, 20, 30, 40],
        [1, 2, 1, 1],
        [2, 6, 3, 3],
        [3, 1, 0, 2],
    )
    assert engine.lay(ends, sizes, heads, [21, 35, 50]) == 0
    assert (ends, sizes, heads) == ([5, 21, 35, 50], [1, 3, 2, 2], [2, 7, 5, 6])


def test_lay_the_sixth_card_takes_the_five() -> None:
    ends, sizes, heads = [10, 20, 30, 40], [1, 5, 1, 1], [3, 9, 3, 3]
    assert engine.lay(ends, sizes, heads, [22]) == 9
    assert (ends, sizes, heads) == ([10, 22, 30, 40], [1, 1, 1, 1], [3, 5, 3, 3])


def test_lay_a_card_below_every_end_takes_the_chosen_row() -> None:
    ends, sizes, heads = [10, 20, 30, 40], [2, 1, 3, 1], [4, 3, 6, 3]
    assert engine.cheapest(heads, sizes) == 1  # 3 heads and 1 card, the first such
    assert engine.lay(ends, sizes, heads, [2], 2) == 6  # chose position 2: its 6 heads
    assert (ends, sizes, heads) == ([2, 10, 20, 40], [1, 2, 1, 1], [1, 4, 3, 3])
    with pytest.raises(ValueError, match="below every row end"):
        engine.lay(ends, sizes, heads, [1])  # no row chosen


def test_lay_adds_each_card_s_heads_to_its_owner() -> None:
    ends, sizes, heads = [10, 20, 30, 40], [5, 1, 1, 5], [7, 1, 1, 9]
    owners = [0] * 105
    owners[45] = 1
    totals = [0, 0]
    assert engine.lay(ends, sizes, heads, [2, 45], 1, owners, totals) == 1 + 9
    assert totals == [1, 9]


def test_the_state_keeps_the_rule_s_columns_in_step_with_its_rows() -> None:
    rng = random.Random(4)
    for _ in range(20):
        state = engine.new_match(5)
        engine.deal_round(state, rng)
        while not state.round_over:
            engine.play_turn(
                state, [rng.choice(h) for h in state.hands], lambda s, c: rng.randrange(4)
            )
            ends, sizes, heads, by_end = engine.rule_rows(state.rows)
            assert (state.ends, state.sizes, state.heads, state.by_end) == (
                ends,
                sizes,
                heads,
                by_end,
            )
            assert state.cheapest_row() == engine.cheapest_row(state.rows)


def test_cheapest_row_breaks_ties_by_fewer_cards_then_lower_index() -> None:
    assert engine.cheapest_row([[55], [1, 2, 3], [10], [4, 6, 7]]) == 2  # 7, 3, 3, 3 heads
    assert engine.cheapest_row([[1, 2], [3, 4], [5], [6, 7]]) == 2  # 2 heads each
    assert engine.cheapest_row([[12, 13], [3, 4], [10], [6, 7, 8]]) == 0  # 2, 2, 3, 3
    assert engine.cheapest_row([[1], [2], [3], [4]]) == 0
    # The state finds it from the rule's columns (in the order of the row ends), same order.
    for rows in ([[55], [1, 2, 3], [10], [4, 6, 7]], [[12, 13], [3, 4], [10], [6, 7, 8]]):
        assert engine.trial(rows).cheapest_row() == engine.cheapest_row(rows)
    assert engine.trial([[6, 7], [1, 2], [5], [3, 4]]).cheapest_row() == 2  # ends 7, 2, 5, 4


def test_play_turn_without_choose_row_takes_the_cheapest_row() -> None:
    rows = [[30, 31], [44], [52], [60, 61, 62]]  # 2, 5, 1 and 3 heads: row 2 is the cheapest
    state = started([[3, 70], [45, 80]], rows)
    takes = engine.play_turn(state, [3, 45], None)
    assert takes == [{"seat": 0, "row": 2, "cards": [52], "reason": "lowest"}]
    assert state.rows == [[30, 31], [44, 45], [3], [60, 61, 62]]


def test_checked_cards_play_the_same_turns_as_unchecked_ones() -> None:
    rng = random.Random(9)
    for _ in range(20):
        seed = rng.randrange(2**32)
        checked, unchecked = engine.new_match(4), engine.new_match(4)
        engine.deal_round(checked, random.Random(seed))
        engine.deal_round(unchecked, random.Random(seed))
        while not checked.round_over:
            cards = [rng.choice(h) for h in checked.hands]
            a = engine.play_turn(checked, cards, lambda s, c: c % 4, True)
            b = engine.play_turn(unchecked, cards, lambda s, c: c % 4)
            assert a == b and checked == unchecked
    # What is not the caller's to check is still checked: the turn, the number of cards.
    with pytest.raises(SetupError, match="round is over"):
        engine.play_turn(checked, [1, 2, 3, 4], None, True)
    state = started([[3], [45]], [[10], [20], [30], [40]])
    with pytest.raises(SetupError, match="1 cards revealed"):
        engine.play_turn(state, [3], None, True)
    assert state.hands == [[3], [45]]


def test_place_appends_takes_the_sixth_or_asks_for_the_lowest() -> None:
    state = started([[16, 2], [36, 3]], [[1, 5, 9, 11, 15], [20], [30], [40]])
    assert engine.place(state, 1, 36, never) is None
    assert state.rows[2] == [30, 36]
    take = engine.place(state, 0, 16, never)
    assert take == {"seat": 0, "row": 0, "cards": [1, 5, 9, 11, 15], "reason": "sixth"}
    assert state.rows[0] == [16]
    assert state.penalties == [1 + 2 + 1 + 5 + 2, 0]
    take = engine.place(state, 1, 3, lambda seat, card: 2)
    assert take == {"seat": 1, "row": 2, "cards": [30, 36], "reason": "lowest"}
    assert state.rows == [[16], [20], [3], [40]]
    assert state.piles == [[1, 5, 9, 11, 15], [30, 36]]


@pytest.mark.parametrize("bad", [4, -1, True, "0", None])
def test_a_bad_row_choice_raises_and_the_row_is_not_taken(bad: Any) -> None:
    state = started([[2], [60]], [[20], [30], [40], [50]])
    with pytest.raises(InvalidRowError):
        engine.place(state, 0, 2, lambda seat, card: bad)
    assert state.rows == [[20], [30], [40], [50]] and state.penalties == [0, 0]


def test_play_turn_resolves_every_card_and_advances_the_turn() -> None:
    state = started([[3, 70], [45, 80], [35, 90]], [[10], [20], [30], [40]])
    takes = engine.play_turn(state, [70, 45, 35], never)
    assert takes == [] and state.turn == HAND_SIZE - 1
    assert state.rows == [[10], [20], [30, 35], [40, 45, 70]]
    takes = engine.play_turn(state, [3, 80, 90], lambda seat, card: 3)
    assert takes == [{"seat": 0, "row": 3, "cards": [40, 45, 70], "reason": "lowest"}]
    assert state.rows == [[10], [20], [30, 35, 80, 90], [3]]
    assert state.penalties == [3 + 2 + 3, 0, 0]
    assert state.round_over
    with pytest.raises(SetupError, match="round is over"):
        engine.play_turn(state, [1, 2, 4], never)


def test_play_turn_takes_legal_cards_without_a_flag() -> None:
    state = started([[3], [45]], [[10], [20], [30], [40]])
    engine.play_turn(state, [3, 45], lambda seat, card: 0)
    assert state.rows == [[3], [20], [30], [40, 45]]


def test_deal_round_starts_the_round_the_rng_deals() -> None:
    state = engine.new_match(3)
    engine.deal_round(state, random.Random(5))
    hands, rows = engine.deal(random.Random(5), 3)
    assert (state.hands, state.rows, state.round, state.turn) == (hands, rows, 0, 0)
    assert state.ends == sorted(r[0] for r in rows) and state.sizes == [1, 1, 1, 1]
    assert [rows[i][0] for i in state.by_end] == state.ends


@pytest.mark.parametrize("n", [2, 4, 10])
def test_deal_round_draws_what_random_sample_draws(n: int) -> None:
    # deal_round draws a plain Random's cards itself (engine._sample): the same cards as
    # Random.sample, and the generator left where sample leaves it, for every seed tried.
    for seed in range(300):
        state, rng, same = engine.new_match(n), random.Random(seed), random.Random(seed)
        engine.deal_round(state, rng)
        assert (state.hands, state.rows) == engine.deal(same, n)
        assert rng.getstate() == same.getstate()


class _Halves(random.Random):
    """A generator of its own (its ``random`` overridden): ``sample`` draws through it."""

    def random(self) -> float:
        return 0.5 * super().random()


def test_deal_round_lets_a_random_subclass_draw_its_own_way() -> None:
    state = engine.new_match(4)
    engine.deal_round(state, _Halves(7))
    assert (state.hands, state.rows) == engine.deal(_Halves(7), 4)
    assert (state.hands, state.rows) != engine.deal(random.Random(7), 4)


# -- scoring ------------------------------------------------------------------------------


def test_finish_round_adds_penalties_only_when_the_round_is_over() -> None:
    state = engine.new_match(2, [10, 20])
    engine.start_round(state, [[2, 70], [60, 80]], [[10], [20], [30], [40]], position=True)
    engine.play_turn(state, [2, 60], lambda seat, card: 1)
    with pytest.raises(SetupError, match="not over"):
        engine.finish_round(state)
    engine.play_turn(state, [70, 80], never)
    assert engine.finish_round(state) == [3, 0]
    assert state.scores == [13, 20]


def test_match_over_once_a_total_reaches_66_between_rounds() -> None:
    state = engine.new_match(3, [65, 0, 0])
    engine.start_round(state, [[2], [50], [60]], [[10], [20], [30], [40]], position=True)
    assert not state.match_over
    engine.play_turn(state, [2, 50, 60], lambda seat, card: 0)  # seat 0 takes [10]: 3 heads
    assert state.penalties == [3, 0, 0]
    engine.finish_round(state)
    assert state.scores == [68, 0, 0] and state.match_over


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([1, 2], [1, 2]),
        ([2, 1], [2, 1]),
        ([7, 7], [1, 1]),
        ([70, 3, 3, 12], [4, 1, 1, 3]),
        ([0] * 10, [1] * 10),
        (list(range(10, 0, -1)), list(range(10, 0, -1))),
    ],
)
def test_ranks_are_one_plus_the_number_of_strictly_lower_totals(
    scores: list[int], expected: list[int]
) -> None:
    assert engine.ranks(scores) == expected
