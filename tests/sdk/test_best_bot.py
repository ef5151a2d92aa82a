"""``builtin:best`` (``BestBot``) and ``builtin:montecarlo-v1``, the best it replaced.

v1 must play exactly as the ``montecarlo`` bot did before ``best`` changed (logs of matches
with it rerun from their seeds); ``best`` must play legal matches at every table size, be
reproducible from its seed and stop sampling at its time cap.  Strength is measured by
``bench/bots.py --field`` (docs/builtins.md), not here.
"""

from __future__ import annotations

import hashlib
import json
import random

import pytest

import cow006
from cow006 import MatchInfo, View
from cow006._view import Table
from cow006.bots import BestBot, MonteCarloBot, make
from cow006.bots._best import (
    SAMPLES,
    excluded_cards,
    greedy_card,
    greedy_chance,
    greedy_key,
    greedy_share,
    play_out,
    turn_loglik,
)
from cow006.cards import HEADS
from cow006.engine import rule_rows

# The digest of ``_v1_digest()`` taken with the ``montecarlo`` bot (``MonteCarloBot()``) of
# main at 7472a41, before ``best`` replaced it: the rounds of two matches (2 and 5 seats, two
# Monte-Carlo seats each).
V1_DIGEST = "1e93dc70b289cf2bf5d7a02c67eca56a119392eea2f1a9a0e168ca49a2bdaf6a"


def _v1_digest(name: str) -> str:
    h = hashlib.sha256()
    for i, n in enumerate((2, 5)):
        k = min(n, 2)
        agents = [make(name) for _ in range(k)] + [make("greedy") for _ in range(n - k)]
        log = cow006.play_match(
            agents, seed=500 + i, agent_seeds=[900 + 10 * i + j for j in range(n)]
        )
        h.update(json.dumps(log["rounds"], sort_keys=True).encode())
        h.update(json.dumps(log["scores"]).encode())
    return h.hexdigest()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["montecarlo-v1", "montecarlo"])
def test_montecarlo_v1_plays_as_before(name: str) -> None:
    assert _v1_digest(name) == V1_DIGEST


def _view(
    hand: tuple[int, ...],
    rows: tuple[tuple[int, ...], ...],
    *,
    n_players: int = 4,
    time_left: float | None = None,
    card: int | None = None,
    current: tuple[int, ...] | None = None,
) -> View:
    starters = tuple(r[0] for r in rows)
    table = Table(rows, (0,) * n_players, (0,) * n_players, (), starters, 0, 0, n_players)
    return View(0, hand, table, time_left, card, current)


def test_names() -> None:
    assert make("best").name == "builtin:best"
    assert isinstance(make("best"), BestBot)
    v1 = make("builtin:montecarlo-v1")
    assert type(v1) is MonteCarloBot and v1.name == "builtin:montecarlo-v1"
    assert type(make("montecarlo")) is MonteCarloBot


def test_greedy_card_is_greedys_choice() -> None:
    rows = ((10, 11, 12, 13, 14), (30,), (50,), (70,))
    ends, lens, hs, _ = rule_rows(rows)
    # 15: a 6th card; 31: snug after 30; 5: below every end; 80: gap 10; 52: gap 2.
    assert greedy_card(ends, lens, hs, [15, 5, 52, 31, 80, 90]) == 31
    assert greedy_card(ends, lens, hs, [15, 5, 80, 90]) == 80
    # Below every end beats a 6th card; among such cards the lowest.
    assert greedy_card(ends, lens, hs, [15, 6, 3]) == 3
    # The same card as builtin:greedy on random hands.
    greedy = make("greedy")
    pool = [c for c in range(1, 105) if c not in (10, 11, 12, 13, 14, 30, 50, 70)]
    for seed in range(30):
        hand = tuple(sorted(random.Random(seed).sample(pool, 6)))
        assert greedy.play(_view(hand, rows)) == greedy_card(ends, lens, hs, hand)


def _greedy_turn(rows: tuple[tuple[int, ...], ...], hands: list[list[int]]) -> list[int]:
    """Each greedy hand's card as ``play_out`` picks it (this seat's card: 104)."""
    ends, lens, hs, _ = rule_rows(rows)
    owner = [0] * 105
    laid: list[int] = []
    # One turn: this seat lays 104 last; the greedy seats' cards are what it is laid with.
    copies = [sorted(h) for h in hands]
    before = [list(h) for h in copies]
    play_out(ends, lens, hs, 104, [], [], 0, copies, owner, [0, 0], True)
    for b, a in zip(before, copies, strict=True):
        (gone,) = set(b) - set(a)
        laid.append(gone)
    return laid


def test_play_out_greedy_seats_play_greedys_card() -> None:
    rows = ((10, 11, 12, 13, 14), (30,), (50,), (70,))
    ends, lens, hs, _ = rule_rows(rows)
    hands = [[15, 31], [5, 80], [52, 90], [15, 6, 3], [71, 72, 73]]
    assert _greedy_turn(rows, hands) == [greedy_card(ends, lens, hs, h) for h in hands]
    assert _greedy_turn(rows, hands) == [31, 80, 52, 3, 71]


def test_play_out_plays_every_card_once_and_counts_every_head() -> None:
    rows = ((10,), (30,), (50,), (70,))
    ends, lens, hs, _ = rule_rows(rows)
    mine = [3, 44, 91, 92]
    free = [20, 60, 21, 61, 22, 62, 23, 63]  # two random-order seats (slots 0, 1), four turns
    hands = [[31, 51, 71, 72]]  # one greedy seat (slot 2); this seat is slot 3
    owner = [0] * 105
    for q, c in enumerate(free):
        owner[c] = q % 2
    for c in hands[0]:
        owner[c] = 2
    for c in mine:
        owner[c] = 3
    pens = [0, 0, 0, 0]
    play_out(ends, lens, hs, 0, mine[:], free, 2, hands, owner, pens, True)
    assert hands == [[]]
    laid = [10, 30, 50, 70, *mine, *free, 31, 51, 71, 72]
    assert len(ends) == 4 and ends == sorted(ends) and set(ends) <= set(laid)
    # Every head is either still on the table or in someone's pile.
    assert sum(pens) + sum(hs) == sum(HEADS[c] for c in laid)


def test_excluded_cards_are_greedier_than_the_card_laid() -> None:
    rows = ((10, 11, 12, 13, 14), (30,), (50,), (70,))
    # 45 (gap 15 after 30) was laid: every card with a smaller gap was not in the hand.
    out = set(excluded_cards(rows, 45))
    assert {31, 44, 51, 64, 71, 84} <= out
    assert not {45, 46, 65, 85, 15, 5} & out
    # A 6th card laid: every free fit was not held, nor a card below every end that
    # takes fewer heads; another 6th card with a smaller gap was not held either.
    out = set(excluded_cards(rows, 16))
    assert {31, 99, 5} <= out and 15 in out and 17 not in out


@pytest.mark.parametrize("prior", [0.0, 0.5])
@pytest.mark.parametrize("n_players", [2, 3, 5, 7, 10])
def test_best_plays_legal_matches_at_any_table_size(n_players: int, prior: float) -> None:
    best = BestBot(samples={10: 8, 5: 4}, prior=prior)
    agents = [best] + [make("greedy") for _ in range(n_players - 1)]
    log = cow006.play_match(agents, seed=40 + n_players)
    cow006.verify(log)
    assert log["faults"] == []
    assert max(log["scores"]) >= 66


@pytest.mark.slow
def test_default_best_plays_a_legal_match() -> None:
    agents = [make("best"), make("montecarlo-v1"), make("safe"), make("greedy")]
    log = cow006.play_match(agents, seed=3)
    cow006.verify(log)
    assert log["faults"] == []


def test_best_is_reproducible_from_its_seed() -> None:
    hand = (3, 17, 28, 41, 55, 62, 77, 80, 96, 104)
    rows = ((10,), (33,), (50,), (70,))

    def decisions(seed: int) -> list[int]:
        bot = BestBot(samples=40)
        bot.on_match_start(MatchInfo(seat=0, n_players=4, seed=seed))
        out = [bot.play(_view(hand, rows))]
        out.append(bot.take_row(_view(hand[1:], rows, card=3, current=(3, 20, 40, 60))))
        out.append(bot.play(_view(hand[3:], ((10, 11, 12, 13, 14), (33,), (50,), (70,)))))
        return out

    assert decisions(5) == decisions(5)
    lineup = ["best", "greedy", "safe"]
    first = cow006.play_match([BestBot(samples=16)] + [make(n) for n in lineup[1:]], 9)
    again = cow006.play_match(
        [BestBot(samples=16)] + [make(n) for n in lineup[1:]], 9, agent_seeds=first["agent_seeds"]
    )
    assert again == first


class _Counting(BestBot):
    """Counts the rollouts its search runs."""

    def __init__(self, **kw: float) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.rollouts = 0
        inner = self.play_out

        def counted(*args: object) -> None:
            self.rollouts += 1
            inner(*args)  # type: ignore[arg-type]

        self.play_out = counted  # type: ignore[assignment,method-assign]


def test_best_stops_sampling_at_its_time_cap() -> None:
    # 100,000 samples a candidate would take minutes; with no time left the search stops at
    # the first check, after one batch of samples for every candidate.
    hand = (3, 17, 28, 41, 55, 62, 77, 80, 96, 104)
    rows = ((10,), (33,), (50,), (70,))
    bot = _Counting(samples=100_000, z=1e9)  # z: no pruning, so every candidate stays
    bot.on_match_start(MatchInfo(seat=0, n_players=4, seed=1))
    assert bot.play(_view(hand, rows, time_left=0.0)) in hand
    assert bot.rollouts == bot.batch * len(hand)
    bot.rollouts = 0
    row = bot.take_row(_view(hand[1:], rows, time_left=0.0, card=3, current=(3, 20, 40, 60)))
    assert row in range(4)
    assert bot.rollouts == bot.batch * 4
    # Without a time limit the budget is the fixed sample count.
    bot = _Counting(samples=32, z=1e9)
    bot.on_match_start(MatchInfo(seat=0, n_players=4, seed=1))
    bot.play(_view(hand, rows))
    assert bot.rollouts == 32 * len(hand)


def test_best_avoids_a_sixth_card() -> None:
    rows = ((20, 21, 22, 23, 25), (40,), (60,), (90,))
    bot = make("best")
    bot.on_match_start(MatchInfo(seat=0, n_players=4, seed=3))
    assert bot.play(_view((26, 91, 92), rows)) != 26


def test_best_learns_which_seats_play_greedily() -> None:
    best = BestBot(samples=4)
    agents = [make("greedy"), best, make("random"), make("greedy")]
    log = cow006.play_match(agents, seed=12, agent_seeds=[1, 2, 3, 4])
    # Greedy seats agree with the model on every counted turn, random ones seldom.
    rounds = len(log["rounds"])
    assert best._turns == [9 * rounds] * 4
    assert best._agree[0] == best._agree[3] == 9 * rounds
    assert best._agree[2] < 5 * rounds
    assert best.model_odds(4) == [best.cap, 0.0, best.cap]  # slots: seats 0, 2, 3
    fresh = BestBot(prior=0.25)
    fresh.on_match_start(MatchInfo(seat=2, n_players=3, seed=1))
    assert fresh.model_odds(3) == [0.25, 0.25]  # nothing seen yet


def test_best_ignores_a_round_entry_it_cannot_read() -> None:
    best = BestBot(samples=4)
    best.on_match_start(MatchInfo(seat=0, n_players=4, seed=1))
    for bad in ({}, {"hands": [[1]], "rows": [[5]], "turns": [{"cards": [99]}]}, {"hands": 3}):
        best.on_round_end(bad)
        assert best._turns == [0, 0, 0, 0] and best._agree == [0, 0, 0, 0]


def test_greedy_key_is_what_model_turn_minimises() -> None:
    ends, lens, hs, _ = rule_rows(((10, 11, 12, 13, 14), (30,), (50,), (70,)))
    hand = [15, 5, 52, 31, 80, 90, 3, 69]
    assert greedy_card(ends, lens, hs, hand) == min(
        hand, key=lambda c: greedy_key(ends, lens, hs, c)
    )
    assert greedy_card(ends, lens, hs, hand) == 31


def test_greedy_chance_of_a_card_laid_from_an_unknown_hand() -> None:
    ends, lens, hs, _ = rule_rows(((10,), (30,), (50,), (70,)))
    pool = [12, 40, 45, 60, 90, 95]
    # 31 (gap 1) beats every card of the pool: it is greedy whatever else the hand held.
    assert greedy_chance(ends, lens, hs, 31, pool, 3) == 1.0
    # 95 (gap 25) is the worst: none of the five other cards is worse.
    assert greedy_chance(ends, lens, hs, 95, pool, 1) == 0.0
    # 45 (gap 15): 60 (10) and 12 (2) and 40 (10) are better, 90 (20) and 95 (25) worse:
    # both other cards from {90, 95} among the five others: 1 / C(5, 2).
    assert greedy_chance(ends, lens, hs, 45, pool, 2) == pytest.approx(1 / 10)
    # No other card in hand: always greedy.
    assert greedy_chance(ends, lens, hs, 95, pool, 0) == 1.0


def test_greedy_share_weighs_the_turns() -> None:
    flat = greedy_share([0.0] * len(turn_loglik(1.0, 5)))
    greedy = [sum(x) for x in zip(*[turn_loglik(1.0, 8) for _ in range(9)], strict=True)]
    random = [sum(x) for x in zip(*[turn_loglik(0.0, 8) for _ in range(9)], strict=True)]
    assert greedy_share(random) < 0.1 < flat < greedy_share(greedy)
    assert greedy_share(greedy) > 0.9


def test_best_tells_greedy_seats_apart_within_the_first_round() -> None:
    seen: list[list[float]] = []

    class Watching(BestBot):
        def play(self, view: View) -> int:
            card = super().play(view)
            if view.round == 0 and view.turn == 6:
                seen.append(self.model_odds(view.n_players))
            return card

    agents = [make("greedy"), Watching(samples=4), make("random"), make("greedy")]
    cow006.play_match(agents, seed=12, agent_seeds=[1, 2, 3, 4])
    # Slots: seats 0, 2, 3.  Before any round log, the greedy seats are modelled already
    # (from the cards they laid on turns 0 to 5), the random one not.
    (odds,) = seen
    assert odds[0] > 0.0 and odds[2] > 0.0 and odds[1] == 0.0


def test_best_draws_a_greedy_seats_hand_from_the_cards_it_can_hold() -> None:
    checked: list[int] = []

    class Checking(BestBot):
        def _worlds(self, view: View, unseen: list[int], h: int):  # type: ignore[no-untyped-def]
            draw = super()._worlds(view, unseen, h)
            banned = self.excluded(view)
            me = view.seat

            def world():  # type: ignore[no-untyped-def]
                w = draw()
                free, nfree, hands, free_slots, greedy_slots = w
                assert nfree == len(free_slots) and len(free) == nfree * h
                cards = free + [c for g in hands for c in g]
                assert len(cards) == len(set(cards)) == (view.n_players - 1) * h
                assert set(cards) <= set(unseen)
                assert sorted(free_slots + greedy_slots) == list(range(view.n_players - 1))
                for g, slot in zip(hands, greedy_slots, strict=True):
                    assert g == sorted(g) and len(g) == h
                    seat = slot if slot < me else slot + 1
                    # Enough cards left to choose from: none it cannot hold is drawn.
                    if len([c for c in unseen if c not in banned[seat]]) >= 3 * h:
                        assert not set(g) & banned[seat]
                        checked.append(len(banned[seat]))
                return w

            return world

    agents = [make("greedy"), Checking(samples=8), make("random"), make("greedy")]
    log = cow006.play_match(agents, seed=12, agent_seeds=[1, 2, 3, 4])
    cow006.verify(log)
    assert checked and max(checked) > 0  # greedy seats were modelled with hands inferred


def test_best_excluded_cards_of_a_round() -> None:
    bot = BestBot(samples=4)
    bot.on_match_start(MatchInfo(seat=0, n_players=3, seed=1))
    rows = ((10,), (30,), (50,), (70,))
    bot.play(_view((1, 2, 3), rows, n_players=3))
    # The turn: seat 1 laid 45 (gap 15), seat 2 laid 71 (gap 1).
    after = ((10,), (30, 45), (50,), (70, 71))
    table = Table(after, (0,) * 3, (0,) * 3, ((1, 45, 71),), (10, 30, 50, 70), 0, 1, 3)
    banned = bot.excluded(View(0, (2, 3), table))
    assert banned[1] == set(excluded_cards(rows, 45)) and 31 in banned[1]
    assert banned[2] == set() or banned[2] == set(excluded_cards(rows, 71))
    assert banned[0] == set()


def test_best_sample_schedule_by_hand_size() -> None:
    bot = BestBot(samples={10: 300, 6: 150, 3: 80})
    assert bot._samples(10) == 300 and bot._samples(6) == 150 and bot._samples(3) == 80
    assert bot._samples(12) == 300 and bot._samples(8) == 150  # the next smaller size's
    assert bot._samples(1) == 80  # none smaller: the smallest size's
    assert BestBot(samples=120)._samples(4) == 120
    assert BestBot()._samples(10) == SAMPLES[10] > BestBot()._samples(2) == SAMPLES[2]
