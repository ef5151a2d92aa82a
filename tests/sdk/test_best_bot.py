"""``builtin:best`` (``BestBot``) and ``builtin:montecarlo-v1``, the best it replaced.

v1 must play exactly as the ``montecarlo`` bot did before ``best`` changed (logs of matches
with it rerun from their seeds); ``best`` must play legal matches at every table size, be
reproducible from its seed and stop sampling at its time cap.  Strength is measured by
``bench/bots.py --field`` (docs/builtins.md), not here.
"""

from __future__ import annotations

import hashlib
import json

import pytest

import cow006
from cow006 import MatchInfo, View
from cow006._view import Table
from cow006.bots import BestBot, MonteCarloBot, make
from cow006.bots._best import (
    greedy_chance,
    greedy_key,
    greedy_share,
    model_avoid,
    model_turn,
    sixth_turns,
    turn_loglik,
)
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


def test_model_turn_moves_each_seats_greedy_card_to_its_turn() -> None:
    ends, lens, hs, _ = rule_rows(((10, 11, 12, 13, 14), (30,), (50,), (70,)))
    # Three seats, two turns: slot j holds opp[j] and opp[j + 3].
    # slot 0: 15 (6th card on the 5-row) or 31 (snug after 30) -> 31
    # slot 1: 5 (below every end) or 80 (gap 10 after 70) -> 80
    # slot 2: 52 (gap 2) or 90 (gap 20) -> 52, already first
    opp = [15, 5, 52, 31, 80, 90]
    model_turn(ends, lens, hs, opp, 0, 3, range(3))
    assert opp == [31, 80, 52, 15, 5, 90]
    opp = [15, 5, 52, 31, 80, 90]
    model_turn(ends, lens, hs, opp, 0, 3, [1])  # only slot 1 is modelled
    assert opp == [15, 80, 52, 31, 5, 90]
    # Below every end beats a 6th card; among such cards the lowest.
    opp = [15, 6, 3]
    model_turn(ends, lens, hs, opp, 0, 1, [0])
    assert opp[0] == 3
    # A later turn: only the cards from index k on are the seat's cards left.
    opp = [31, 80, 52, 15, 5, 90, 33, 71, 91]  # turn 1 starts at k = 3
    model_turn(ends, lens, hs, opp, 3, 3, range(3))
    assert opp[:3] == [31, 80, 52]  # turn 0 untouched
    assert opp[3:] == [33, 71, 90, 15, 5, 91]


@pytest.mark.parametrize("every_turn", [True, False])
@pytest.mark.parametrize("n_players", [2, 3, 5, 7, 10])
def test_best_plays_legal_matches_at_any_table_size(n_players: int, every_turn: bool) -> None:
    best = BestBot(samples=8, every_turn=every_turn, prior=0.5)
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
        inner = self.rollout

        def counted(*args: object) -> None:
            self.rollouts += 1
            inner(*args)  # type: ignore[arg-type]

        self.rollout = counted  # type: ignore[assignment,method-assign]


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
    log = cow006.play_match(agents, seed=12)
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
    pick = hand[:]
    model_turn(ends, lens, hs, pick, 0, 1, [0])
    assert pick[0] == min(hand, key=lambda c: greedy_key(ends, lens, hs, c)) == 31


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


def test_model_avoid_plays_the_first_card_that_takes_no_row() -> None:
    ends, lens, hs, _ = rule_rows(((10, 11, 12, 13, 14), (30,), (50,), (70,)))
    # One seat, three turns: its sampled order is 15 (6th card), 16 (6th card), 5 (below).
    opp = [15, 16, 5]
    model_avoid(ends, lens, hs, opp, 0, 1, [0])
    assert opp == [5, 16, 15]
    # Two seats: slot 1's first card (31) already fits; slot 0 has only 6th cards.
    opp = [15, 31, 16, 80]
    model_avoid(ends, lens, hs, opp, 0, 2, [0, 1])
    assert opp == [15, 31, 16, 80]


def test_sixth_turns_counts_sixth_cards_from_a_round_entry() -> None:
    entry = {
        "rows": [[1, 2, 3, 4, 5], [30], [50], [70]],
        "hands": [[6, 40], [31, 80]],
        "turns": [
            {"cards": [6, 31], "rows": [[6], [30, 31], [50], [70]]},
            {"cards": [40, 80], "rows": [[6], [30, 31, 40], [50], [70, 80]]},
        ],
    }
    # Seat 0 laid its one 6th card of two; seat 1 had none.  The last turn is left out.
    assert sixth_turns(entry) == [[(True, 0.5)], [(False, 0.0)]]


def test_best_tells_greedy_seats_apart_within_the_first_round() -> None:
    seen: list[list[float]] = []

    class Watching(BestBot):
        def play(self, view: View) -> int:
            card = super().play(view)
            if view.round == 0 and view.turn == 6:
                seen.append(self.model_odds(view.n_players))
            return card

    agents = [make("greedy"), Watching(samples=4), make("random"), make("greedy")]
    cow006.play_match(agents, seed=12)
    # Slots: seats 0, 2, 3.  Before any round log, the greedy seats are modelled already
    # (from the cards they laid on turns 0 to 5), the random one not.
    (odds,) = seen
    assert odds[0] > 0.0 and odds[2] > 0.0 and odds[1] == 0.0


def test_best_learns_how_often_a_seat_avoids_a_sixth_card() -> None:
    best = BestBot(samples=4, avoid=0.6, learn_avoid=True)
    agents = [best, make("random"), make("greedy"), make("random")]
    cow006.play_match(agents, seed=21)
    odds = best.avoid_odds(4)
    # Random seats lay 6th cards as often as chance would: below the prior.
    assert odds[0] < 0.6 and odds[2] < 0.6
    assert BestBot(avoid=0.6).avoid_odds(4) == [0.6, 0.6, 0.6]
