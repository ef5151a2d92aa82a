"""``cow006.replay.steps``: a log replayed step by step, every row from the engine.

The steps of real logs agree with what the logs record (cards, takes, rows after each turn,
penalties, totals), each placement changes only the row it names, a "lowest" take carries the
cost of every row, and a log that cannot be replayed is refused at its first problem.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from cow006 import LogError
from cow006.cards import HAND_SIZE, heads_of
from cow006.replay import Deal, Placement, Reveal, RoundEnd, Step, steps, takes_of

Log = dict[str, Any]
MakeLog = Callable[[int, int], Log]


def a_log_with(match_log: MakeLog, n: int, reason: str) -> Log:
    """A log of n players with at least one take of this reason."""
    for seed in range(100):
        log = match_log(n, seed)
        if any(
            tk["reason"] == reason for r in log["rounds"] for t in r["turns"] for tk in t["takes"]
        ):
            return log
    raise AssertionError(f"no {reason} take in 100 seeds")


@pytest.mark.parametrize("n", [2, 4, 10])
def test_the_steps_of_a_log_are_deal_reveals_placements_and_round_ends(
    match_log: MakeLog, n: int
) -> None:
    log = match_log(n, 7 + n)
    letter = {Deal: "D", Reveal: "R", Placement: "P", RoundEnd: "E"}
    kinds = [letter[type(step)] for step in steps(log)]
    per_round = "D" + ("R" + "P" * n) * HAND_SIZE + "E"
    assert "".join(kinds) == per_round * len(log["rounds"])


@pytest.mark.parametrize("n", [2, 3, 5, 10])
def test_the_steps_agree_with_everything_the_log_records(match_log: MakeLog, n: int) -> None:
    log = match_log(n, 100 + n)
    placed: list[Placement] = []
    rows: list[list[int]] = []
    totals = [0] * n
    for step in steps(log):
        rnd = log["rounds"][step.round]
        if isinstance(step, Deal):
            assert [list(r) for r in step.rows] == rnd["rows"]
            assert [list(h) for h in step.hands] == rnd["hands"]
            assert list(step.scores) == totals
            rows = rnd["rows"]
        elif isinstance(step, Reveal):
            turn = rnd["turns"][step.turn]
            assert list(step.cards) == turn["cards"]
            assert [step.cards[s] for s in step.order] == sorted(turn["cards"])
            assert [list(r) for r in step.rows] == rows  # the rows before the turn
        elif isinstance(step, Placement):
            placed.append(step)
            turn = rnd["turns"][step.turn]
            assert step.card == turn["cards"][step.seat] == sorted(turn["cards"])[step.nth - 1]
            assert step.rows[step.row][-1] == step.card
            if step.take is not None:
                assert step.rows[step.row] == (step.card,)  # the card stays, alone
                assert step.take.heads == heads_of(step.take.cards)
            if step.nth == n:
                assert takes_of(placed) == turn["takes"]
                rows = [list(r) for r in step.rows]
                assert rows == turn["rows"]
                placed.clear()
        else:
            assert isinstance(step, RoundEnd)
            assert list(step.penalties) == rnd["penalties"]
            totals = [a + b for a, b in zip(totals, rnd["penalties"], strict=True)]
            assert list(step.scores) == totals
    assert totals == log["scores"]


def test_a_placement_changes_only_its_row(match_log: MakeLog) -> None:
    before: tuple[tuple[int, ...], ...] = ()
    for step in steps(match_log(4, 3)):
        if isinstance(step, Reveal):
            before = step.rows
        elif isinstance(step, Placement):
            changed = [i for i in range(4) if step.rows[i] != before[i]]
            assert changed == [step.row]
            before = step.rows


def test_a_lowest_take_carries_the_cost_of_every_row(match_log: MakeLog) -> None:
    log = a_log_with(match_log, 4, "lowest")
    rows: tuple[tuple[int, ...], ...] = ()
    seen = 0
    for step in steps(log):
        if isinstance(step, Reveal | Placement):
            if isinstance(step, Placement) and step.take is not None:
                take = step.take
                if take.reason == "lowest":
                    assert take.costs == tuple(heads_of(r) for r in rows)
                    assert take.costs[take.row] == take.heads
                    assert step.card < min(r[-1] for r in rows)
                    seen += 1
                else:
                    assert take.costs is None
            rows = step.rows
    assert seen


def test_only_the_decisions_are_read_from_the_log(match_log: MakeLog) -> None:
    log = a_log_with(match_log, 3, "sixth")
    tampered = copy.deepcopy(log)
    for rnd in tampered["rounds"]:
        rnd["penalties"] = [0, 0, 0]
        for turn in rnd["turns"]:
            turn["rows"] = []
            for take in turn["takes"]:
                if take["reason"] == "sixth":
                    take["cards"] = []
    tampered["scores"] = []

    def replayed(log: Log) -> list[Step]:
        return list(steps(log))

    assert replayed(tampered) == replayed(log)


def test_a_log_that_does_not_replay_is_refused_at_its_first_problem(match_log: MakeLog) -> None:
    log = a_log_with(match_log, 3, "lowest")
    r, t, k = next(
        (r, t, k)
        for r, rnd in enumerate(log["rounds"])
        for t, turn in enumerate(rnd["turns"])
        for k, tk in enumerate(turn["takes"])
        if tk["reason"] == "lowest"
    )
    del log["rounds"][r]["turns"][t]["takes"][k]
    done = []
    with pytest.raises(LogError, match=rf"^rounds\[{r}\]\.turns\[{t}\]: card \d+ of seat \d"):
        for step in steps(log):
            done.append(step)
    assert done[-1] == next(
        s for s in done if isinstance(s, Reveal) and (s.round, s.turn) == (r, t)
    )
    with pytest.raises(LogError, match=r"^players: a match has 2 to 10 players"):
        list(steps({"players": [], "rounds": []}))
