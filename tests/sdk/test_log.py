"""``verify`` replays cow006-match-1 logs: it accepts real ones and rejects every tampering
with a message that starts with the place of the first inconsistency."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cow006 import LogError, verify
from cow006.log import FORMAT, dumps, read, write

Log = dict[str, Any]
MakeLog = Callable[[int, int], Log]


def find_take(log: Log, reason: str) -> tuple[int, int, int]:
    """(round, turn, index) of the first take with this reason."""
    for r, rnd in enumerate(log["rounds"]):
        for t, turn in enumerate(rnd["turns"]):
            for k, take in enumerate(turn["takes"]):
                if take["reason"] == reason:
                    return r, t, k
    raise LookupError(reason)


@pytest.fixture(scope="module")
def real_log(match_log: MakeLog) -> Log:
    """A 3-player log with several rounds, a 'lowest' take and a 'sixth' take in round 0."""
    for seed in range(200):
        log = match_log(3, seed)
        if len(log["rounds"]) >= 3:
            try:
                if find_take(log, "lowest")[0] == find_take(log, "sixth")[0] == 0:
                    return log
            except LookupError:
                continue
    raise AssertionError("no suitable log in 200 seeds")


@pytest.fixture
def log(real_log: Log) -> Log:
    """A fresh copy to tamper with."""
    return copy.deepcopy(real_log)


def rejected(log: Log, place: str, what: str = "") -> str:
    """Assert verify rejects the log at ``place`` (the message prefix); returns the message."""
    with pytest.raises(LogError) as info:
        verify(log)
    message = str(info.value)
    assert message.startswith(place), message
    assert re.search(what, message), message
    return message


# -- real logs are accepted ------------------------------------------------------------------


@pytest.mark.parametrize("n", range(2, 11))
def test_real_logs_verify(match_log: MakeLog, n: int) -> None:
    for seed in (n, 1000 + n):
        log = match_log(n, seed)
        assert log["format"] == FORMAT
        verify(log)
        verify(json.loads(dumps(log)))


def test_a_written_log_reads_back_and_verifies(real_log: Log, tmp_path: Path) -> None:
    path = tmp_path / "match.json"
    write(real_log, path)
    assert read(path) == real_log
    verify(read(path))


def test_read_names_the_file_when_it_cannot_load_it(tmp_path: Path) -> None:
    with pytest.raises(LogError, match="no such file"):
        read(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(LogError, match=r"bad\.json: not JSON \(line 1"):
        read(bad)
    bad.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(LogError, match="a match log is a JSON object"):
        read(bad)


# -- the header -------------------------------------------------------------------------------


def test_rejects_a_log_that_is_not_an_object() -> None:
    for bad in (None, [], "cow006-match-1", 3):
        with pytest.raises(LogError, match=r"^log: a match log is a JSON object"):
            verify(bad)


def test_rejects_a_wrong_format_string(log: Log) -> None:
    log["format"] = "cow006-match-2"
    rejected(log, "format:", "expected 'cow006-match-1', found 'cow006-match-2'")
    del log["format"]
    rejected(log, "format:", "found None")


def test_rejects_a_seed_that_is_not_an_integer(log: Log) -> None:
    log["seed"] = str(log["seed"])
    rejected(log, "seed:", "integer")


@pytest.mark.parametrize("n", [0, 1, 11])
def test_rejects_a_wrong_number_of_players(log: Log, n: int) -> None:
    log["players"] = [{"seat": i, "agent": f"bot{i}"} for i in range(n)]
    rejected(log, "players:", f"2 to 10 players, found {n}")


def test_rejects_players_out_of_seat_order(log: Log) -> None:
    log["players"][0], log["players"][1] = log["players"][1], log["players"][0]
    rejected(log, "players[0]:", "seat out of order")


# -- the deal ---------------------------------------------------------------------------------


def test_rejects_a_duplicated_card_in_the_deal(log: Log) -> None:
    hands = log["rounds"][1]["hands"]
    hands[1][0] = hands[0][0]
    rejected(log, "rounds[1]:", "a card appears twice in the deal")


def test_rejects_a_hand_card_that_is_also_a_row_starter(log: Log) -> None:
    rnd = log["rounds"][0]
    rnd["hands"][2][-1] = rnd["rows"][3][0]
    rejected(log, "rounds[0]:", "twice")


def test_rejects_a_hand_of_nine_cards(log: Log) -> None:
    del log["rounds"][0]["hands"][1][4]
    rejected(log, "rounds[0].hands[1]:", "expected 10 entries, found 9")


def test_rejects_a_row_of_two_cards_in_the_deal(log: Log) -> None:
    log["rounds"][0]["rows"][0].append(105)
    rejected(log, "rounds[0].rows[0]:", "expected 1 entries")


# -- the turns --------------------------------------------------------------------------------


def test_rejects_a_changed_card(log: Log) -> None:
    turn = log["rounds"][0]["turns"][0]
    hand = log["rounds"][0]["hands"][1]
    other = next(c for c in hand if c != turn["cards"][1])  # legal, but not what was played
    turn["cards"][1] = other
    rejected(log, "rounds[0].turns[0]")


def test_rejects_a_card_not_in_hand(log: Log) -> None:
    rnd = log["rounds"][0]
    theirs = rnd["turns"][9]["cards"][1]  # still in seat 1's hand at turn 3
    rnd["turns"][3]["cards"][0] = theirs
    rejected(log, "rounds[0].turns[3]:", f"seat 0 played {theirs}, which is not a card in its hand")


def test_rejects_a_card_played_twice(log: Log) -> None:
    rnd = log["rounds"][0]
    rnd["turns"][5]["cards"][2] = rnd["turns"][4]["cards"][2]
    rejected(log, "rounds[0].turns[5]:", "not a card in its hand")


def test_rejects_a_card_that_is_not_an_integer(log: Log) -> None:
    cards = log["rounds"][0]["turns"][2]["cards"]
    cards[0] = float(cards[0])
    rejected(log, "rounds[0].turns[2].cards:", "expected integers")


def test_rejects_a_missing_turn(log: Log) -> None:
    del log["rounds"][1]["turns"][-1]
    rejected(log, "rounds[1].turns:", "expected 10 turns")


def test_rejects_a_wrong_sixth_take(log: Log) -> None:
    r, t, k = find_take(log, "sixth")
    take = log["rounds"][r]["turns"][t]["takes"][k]
    take["row"] = (take["row"] + 1) % 4
    rejected(log, f"rounds[{r}].turns[{t}].takes:", "expected")


def test_rejects_a_take_with_other_cards(log: Log) -> None:
    r, t, k = find_take(log, "sixth")
    log["rounds"][r]["turns"][t]["takes"][k]["cards"].pop()
    rejected(log, f"rounds[{r}].turns[{t}].takes:", "expected")


def test_rejects_a_missing_sixth_take(log: Log) -> None:
    r, t, k = find_take(log, "sixth")
    del log["rounds"][r]["turns"][t]["takes"][k]
    rejected(log, f"rounds[{r}].turns[{t}].takes:", "expected")


def test_rejects_an_invented_take(log: Log) -> None:
    turn = log["rounds"][0]["turns"][0]
    turn["takes"].append({"seat": 0, "row": 0, "cards": [1], "reason": "sixth"})
    rejected(log, "rounds[0].turns[0].takes:", "expected")


def test_rejects_a_lowest_take_of_another_row(log: Log) -> None:
    r, t, k = find_take(log, "lowest")
    take = log["rounds"][r]["turns"][t]["takes"][k]
    take["row"] = (take["row"] + 1) % 4  # the replay then takes the other row's cards
    rejected(log, f"rounds[{r}].turns[{t}].takes:", "expected")


def test_rejects_a_missing_lowest_take(log: Log) -> None:
    r, t, k = find_take(log, "lowest")
    del log["rounds"][r]["turns"][t]["takes"][k]
    rejected(log, f"rounds[{r}].turns[{t}]:", "below every row end, but no 'lowest' take")


@pytest.mark.parametrize("row", [7, -1, True, "0"])
def test_rejects_a_lowest_take_with_an_impossible_row(log: Log, row: Any) -> None:
    r, t, k = find_take(log, "lowest")
    log["rounds"][r]["turns"][t]["takes"][k]["row"] = row
    rejected(log, f"rounds[{r}].turns[{t}]:", "rows are 0 to 3")


def test_rejects_a_sixth_take_relabelled_as_lowest(log: Log) -> None:
    r, t, k = find_take(log, "sixth")
    log["rounds"][r]["turns"][t]["takes"][k]["reason"] = "lowest"
    rejected(log, f"rounds[{r}].turns[{t}].takes:", "expected")


def test_rejects_wrong_rows_after_a_turn(log: Log) -> None:
    rows = log["rounds"][0]["turns"][4]["rows"]
    rows[0], rows[1] = rows[1], rows[0]
    rejected(log, "rounds[0].turns[4].rows:", "expected")


# -- penalties, scores, ranks -----------------------------------------------------------------


def test_rejects_wrong_penalties(log: Log) -> None:
    log["rounds"][0]["penalties"][0] += 1
    rejected(log, "rounds[0].penalties:", "expected")


def test_rejects_card_numbers_summed_instead_of_heads(log: Log) -> None:
    r, t, k = find_take(log, "sixth")
    take = log["rounds"][r]["turns"][t]["takes"][k]
    log["rounds"][r]["penalties"][take["seat"]] += sum(take["cards"]) - 5
    rejected(log, f"rounds[{r}].penalties:", "expected")


def test_rejects_wrong_scores(log: Log) -> None:
    log["scores"][1] -= 1
    rejected(log, "scores:", "expected")


def test_rejects_wrong_ranks(log: Log) -> None:
    log["ranks"][0] += 1
    rejected(log, "ranks:", "expected")


# -- rounds -----------------------------------------------------------------------------------


def test_rejects_a_missing_last_round(log: Log) -> None:
    del log["rounds"][-1]
    rejected(log, "rounds:", "the match ended before any total reached 66")


def test_rejects_a_missing_first_round(log: Log) -> None:
    del log["rounds"][0]  # the second round's deal is not the seed's first
    rejected(log, "rounds[0]:", "the deal is not the one the seed")


def test_rejects_an_extra_round_after_the_end(log: Log) -> None:
    n = len(log["rounds"])
    log["rounds"].append(copy.deepcopy(log["rounds"][0]))
    rejected(log, f"rounds[{n}]:", "the match should have ended")


def test_rejects_no_rounds_at_all(log: Log) -> None:
    log["rounds"] = []
    rejected(log, "rounds:", "non-empty")


# -- faults -----------------------------------------------------------------------------------


def test_rejects_a_fault_of_a_seat_that_does_not_exist(log: Log) -> None:
    log["faults"] = [{"seat": 3, "round": 0, "turn": 0, "kind": "timeout", "detail": ""}]
    rejected(log, "faults[0]:", "valid seat")


def test_accepts_recorded_faults(log: Log) -> None:
    log["faults"] = [{"seat": 2, "round": 0, "turn": 0, "kind": "timeout", "detail": "late"}]
    verify(log)


# -- integers are JSON integers, and the deals are the seed's (issue 13) -----------------------


@pytest.mark.parametrize(
    ("path", "place"),
    [
        (("rounds", 0, "penalties", 1), "rounds[0].penalties:"),
        (("scores", 0), "scores:"),
        (("ranks", 2), "ranks:"),
        (("rounds", 0, "turns", 0, "rows", 0, 0), "rounds[0].turns[0].rows:"),
        (("players", 1, "seat"), "players[1].seat:"),
    ],
)
def test_rejects_a_float_where_an_integer_belongs(
    log: Log, path: tuple[Any, ...], place: str
) -> None:
    """5.0 compares equal to 5 in Python: still not what the format says."""
    *parents, last = path
    holder: Any = log
    for key in parents:
        holder = holder[key]
    holder[last] = float(holder[last])
    rejected(log, place, rf"{holder[last]} where the format has an integer|found {holder[last]}")


def test_rejects_true_for_rank_one(log: Log) -> None:
    seat = log["ranks"].index(1)
    log["ranks"][seat] = True
    rejected(log, "ranks:", "^ranks: true where the format has an integer$")


def test_rejects_a_float_in_a_take(log: Log) -> None:
    r, t, k = find_take(log, "sixth")
    take = log["rounds"][r]["turns"][t]["takes"][k]
    take["seat"] = float(take["seat"])
    rejected(log, f"rounds[{r}].turns[{t}].takes:", r"\d\.0 where the format has an integer")


@pytest.mark.parametrize("turn", [2.0, True, 11, -1, "3", None])
def test_rejects_a_fault_turn_that_is_not_a_turn(log: Log, turn: Any) -> None:
    log["faults"] = [{"seat": 2, "round": 0, "turn": turn, "kind": "timeout", "detail": ""}]
    rejected(log, "faults[0]:", "turn out of range")


def test_rejects_a_float_or_bool_seed(log: Log) -> None:
    log["seed"] = float(log["seed"])
    rejected(log, "seed:", r"expected an integer, found \d+\.0")
    log["seed"] = True
    rejected(log, "seed:", "expected an integer, found true")


def test_rejects_deals_that_are_not_the_seeds(log: Log) -> None:
    """Every card is still where the replay wants it, but not where the seed dealt it."""
    seed = log["seed"]
    log["seed"] = seed + 1
    rejected(log, "rounds[0]:", f"the deal is not the one the seed {seed + 1} gives")


def test_rejects_rounds_in_another_order(log: Log, match_log: MakeLog) -> None:
    # A whole other match of the same seats, replaying on its own, under this log's seed.
    other = next(lg for s in range(1000, 1200) if (lg := match_log(3, s))["seed"] != log["seed"])
    verify(other)
    other["seed"] = log["seed"]
    rejected(other, "rounds[0]:", "the deal is not the one the seed")


def test_rejects_a_later_round_not_from_the_seed(log: Log) -> None:
    """Round 1 holds a valid deal (round 0's again) that the seed did not give there."""
    log["rounds"][1]["hands"] = copy.deepcopy(log["rounds"][0]["hands"])
    log["rounds"][1]["rows"] = copy.deepcopy(log["rounds"][0]["rows"])
    rejected(log, "rounds[1]:", "the deal is not the one the seed")


def test_explicit_deals_are_recorded_and_only_the_later_rounds_checked() -> None:
    from cow006 import Agent, View, play_match

    class Low(Agent):
        def play(self, view: View) -> int:
            return min(view.hand)

    hands = [list(range(1, 11)), list(range(11, 21))]
    log = play_match([Low(), Low()], seed=9, deals=[(hands, [[30], [40], [50], [60]])])
    assert log["given_deals"] == 1
    verify(log)
    assert len(log["rounds"]) > 1  # the later rounds were dealt from the seed, and checked
    del log["given_deals"]
    rejected(log, "rounds[0]:", "the deal is not the one the seed 9 gives")
    for bad in (-1, 1.0, True, "1"):
        log["given_deals"] = bad
        rejected(log, "given_deals:", "non-negative integer")


def test_a_seeded_match_records_no_given_deals(real_log: Log) -> None:
    assert "given_deals" not in real_log


def test_read_refuses_json_nested_too_deep(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"rounds": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(LogError, match="nested too deep"):
        read(deep)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda lg: lg["scores"].__setitem__(0, float(lg["scores"][0])), "where the format"),
        (lambda lg: lg.__setitem__("seed", lg["seed"] + 1), "the deal is not the one the seed"),
    ],
)
def test_cow006_verify_prints_the_new_checks_in_one_line(
    real_log: Log, tmp_path: Path, change: Callable[[Log], None], says: str
) -> None:
    from typer.testing import CliRunner

    from cow006.cli import app

    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    write(real_log, good)
    log = copy.deepcopy(real_log)
    change(log)
    write(log, bad)
    runner = CliRunner()
    ok = runner.invoke(app, ["verify", str(good)])
    assert ok.exit_code == 0 and "ok 1 logs" in ok.output
    result = runner.invoke(app, ["verify", str(good), str(bad)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{bad}: ") and says in lines[0], lines


def test_agent_seeds_are_integers_one_per_seat(log: Log) -> None:
    assert len(log["agent_seeds"]) == 3
    verify(log)
    seeds = log["agent_seeds"]
    for bad, says in (
        ([*seeds[:2], float(seeds[2])], r"agent_seeds\[2\]: expected an integer, found"),
        ([*seeds[:2], True], r"agent_seeds\[2\]: expected an integer, found true"),
        ([*seeds[:2], -1], r"agent_seeds\[2\]: a seed is in 0"),
        ([*seeds[:2], 2**63], r"agent_seeds\[2\]: a seed is in 0"),
        (seeds[:2], "agent_seeds: expected 3 seeds"),
        (None, "agent_seeds: expected 3 seeds"),
    ):
        log["agent_seeds"] = bad
        rejected(log, "agent_seeds", says)
    del log["agent_seeds"]  # a log written before agent seeds were recorded
    verify(log)
