"""The built-in bots: registry, legal full matches, reproducibility, time cap, strength."""

from __future__ import annotations

import time

import pytest

import cow006
from cow006 import AgentLoadError, MatchInfo, View
from cow006._view import Table
from cow006.bots import BUILTINS, MonteCarloBot, make, names


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


# -- the registry ----------------------------------------------------------------------------
def test_registry_names() -> None:
    assert names() == list(BUILTINS)
    assert {"random", "greedy", "safe", "montecarlo", "best"} <= set(names())
    for n in names():
        a, b = make(n), make(f"builtin:{n}")
        assert a.name == b.name == f"builtin:{n}"
        assert a is not b  # one fresh agent per seat


def test_unknown_builtin() -> None:
    with pytest.raises(AgentLoadError) as err:
        make("builtin:nope")
    message = str(err.value)
    assert "'builtin:nope'" in message
    for n in names():
        assert n in message
    assert message.count(".") <= 1  # one sentence


# -- full matches ----------------------------------------------------------------------------
@pytest.mark.slow
def test_every_builtin_plays_a_legal_match() -> None:
    lineup = [make(n) for n in names()]  # five seats: every built-in at one table
    log = cow006.play_match(lineup, seed=11)
    cow006.verify(log)
    assert log["faults"] == []
    assert [p["agent"] for p in log["players"]] == [f"builtin:{n}" for n in names()]


@pytest.mark.parametrize("n_players", [2, 10])
def test_montecarlo_any_table_size(n_players: int) -> None:
    agents = [MonteCarloBot(samples=10)] + [make("random") for _ in range(n_players - 1)]
    log = cow006.play_match(agents, seed=5)
    cow006.verify(log)
    assert log["faults"] == []


@pytest.mark.slow
def test_reproducible_from_the_seed_and_the_agent_seeds() -> None:
    def run(seed: int, agent_seeds: list[int] | None = None) -> dict:
        lineup = [make(n) for n in ("best", "safe", "greedy", "random")]
        return cow006.play_match(lineup, seed, agent_seeds=agent_seeds)

    first = run(2024)
    assert run(2024, first["agent_seeds"]) == first
    cheap = ("random", "lowest", "greedy", "safe")
    again = cow006.play_match([make(n) for n in cheap], 7)
    assert again == cow006.play_match([make(n) for n in cheap], 7, agent_seeds=again["agent_seeds"])
    assert (
        again["rounds"][0]["hands"]
        != cow006.play_match([make(n) for n in cheap], 8)["rounds"][0]["hands"]
    )


# -- decisions -------------------------------------------------------------------------------
HAND = (3, 17, 28, 41, 55, 62, 77, 80, 96, 104)
ROWS = ((10,), (33,), (50,), (70,))


def test_montecarlo_respects_a_tiny_time_left() -> None:
    bot = MonteCarloBot(samples=100_000)  # would take minutes without the cap
    bot.on_match_start(MatchInfo(seat=0, n_players=4, seed=1))
    start = time.perf_counter()
    card = bot.play(_view(HAND, ROWS, time_left=0.02))
    assert card in HAND
    row = bot.take_row(_view(HAND[1:], ROWS, time_left=0.02, card=3, current=(3, 20, 40, 60)))
    assert row in range(4)
    assert time.perf_counter() - start < 1.0


def test_take_row_on_the_last_turn_is_the_cheapest() -> None:
    rows = ((20, 21, 22), (55,), (60, 61), (90,))  # heads 7, 7, 4, 3
    view = _view((), rows, card=5, current=(5, 30, 70, 95))
    for n in ("greedy", "safe", "montecarlo"):
        assert make(n).take_row(view) == 3


def test_montecarlo_avoids_a_sixth_card() -> None:
    # 26 would be the 6th card of a 5-card row; 91 and 92 fit safely on short rows.
    rows = ((20, 21, 22, 23, 25), (40,), (60,), (90,))
    view = _view((26, 91, 92), rows)
    bot = make("best")
    bot.on_match_start(MatchInfo(seat=0, n_players=4, seed=3))
    assert bot.play(view) != 26


@pytest.mark.slow
def test_best_beats_random_clearly() -> None:
    # The matches are reproducible, so this is not flaky; the margin leaves room to retune.
    best_scores, random_scores = [], []
    for i in range(4):  # one match per seat
        seat = i % 4
        agents = [make("random") for _ in range(4)]
        agents[seat] = make("best")
        log = cow006.play_match(
            agents, seed=100 + i, agent_seeds=[1000 + 4 * i + k for k in range(4)]
        )
        best_scores.append(log["scores"][seat])
        random_scores += [s for k, s in enumerate(log["scores"]) if k != seat]
    mean_best = sum(best_scores) / len(best_scores)
    mean_random = sum(random_scores) / len(random_scores)
    assert mean_best < 0.6 * mean_random
