"""``cow006.rerun`` and ``cow006 rerun``: a recorded match played again with one seat's bot.

The property: rerun as itself, a deterministic bot reproduces its recorded match exactly,
over many logs (hypothesis draws the field, the seat and the seeds).  A different bot is
reported turn by turn, and the rerun's log is a valid match log of the same deals.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cow006 import FunctionAgent, View, play_match, verify
from cow006.bots import make
from cow006.cards import heads_of
from cow006.cli import app
from cow006.rerun import RecordedSeat, rerun, table_before

# Built-ins whose only randomness is their MatchInfo seed (montecarlo is too slow here).
FIELD = ["random", "lowest", "greedy", "safe"]
MANY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
runner = CliRunner()


def a_log(names: list[str], seed: int) -> dict[str, Any]:
    return dict(play_match([make(n) for n in names], seed=seed))


@MANY
@given(
    names=st.lists(st.sampled_from(FIELD), min_size=2, max_size=10),
    seat=st.integers(min_value=0, max_value=9),
    seed=st.integers(min_value=0, max_value=2**63 - 1),
)
def test_a_bot_rerun_as_itself_reproduces_its_match_exactly(
    names: list[str], seat: int, seed: int
) -> None:
    seat %= len(names)
    log = a_log(names, seed)
    again = rerun(log, seat, make(names[seat]))
    assert again.same
    assert again.differences == []
    assert again.log["rounds"] == log["rounds"]
    assert again.log["scores"] == log["scores"] and again.log["ranks"] == log["ranks"]
    assert (again.score, again.rank) == (again.recorded_score, again.recorded_rank)


def test_a_different_bot_is_reported_where_it_decided_otherwise() -> None:
    log = a_log(["greedy", "random", "safe", "lowest"], 5)
    lowest = FunctionAgent(lambda view: min(view.hand))
    highest = FunctionAgent(lambda view: max(view.hand))
    again = rerun(log, 3, lowest)  # seat 3 was "lowest": the same decisions
    assert again.same and not again.differences
    other = rerun(log, 3, highest)
    assert not other.same
    verify(other.log)  # the rerun is a valid match log
    assert other.log["seed"] == log["seed"]
    assert other.differences
    # The first round is dealt as recorded: the new decisions are played from the same hand.
    assert other.log["rounds"][0]["hands"] == log["rounds"][0]["hands"]
    first_round = [d for d in other.differences if d.round == 0]
    assert [d.card for d in first_round][:1] == [max(log["rounds"][0]["hands"][3])]
    for d in other.differences:
        new_turn = other.log["rounds"][d.round]["turns"][d.turn]
        assert new_turn["cards"][3] == d.card
        taken = [t for t in new_turn["takes"] if t["seat"] == 3]
        assert d.heads == sum(heads_of(t["cards"]) for t in taken)
        if d.recorded_card is not None:
            old_turn = log["rounds"][d.round]["turns"][d.turn]
            assert old_turn["cards"][3] == d.recorded_card
            assert (d.card, d.row) != (d.recorded_card, d.recorded_row)
    # The other seats played their recorded cards in every recorded turn.
    for r, rnd in enumerate(other.log["rounds"][: len(log["rounds"])]):
        for t, turn in enumerate(rnd["turns"]):
            old = log["rounds"][r]["turns"][t]["cards"]
            assert turn["cards"][:3] == old[:3]
    assert other.score == other.log["scores"][3]
    assert other.recorded_score == log["scores"][3]


def test_a_recorded_seat_keeps_its_row_only_on_the_table_it_chose_on() -> None:
    # Find a recorded "lowest" take of a seat other than 0.
    for seed in range(200):
        log = a_log(["random", "random", "random"], seed)
        found = [
            (r, t, take)
            for r, rnd in enumerate(log["rounds"])
            for t, turn in enumerate(rnd["turns"])
            for take in turn["takes"]
            if take["reason"] == "lowest" and take["seat"] != 0
        ]
        # A take whose row is not the cheapest one, so the fallback would differ.
        found = [
            f for f in found if f[2]["row"] != _cheapest(table_before(log["rounds"], f[0], f[1]))
        ]
        if found:
            break
    else:
        pytest.fail("no recorded non-cheapest lowest take in 200 matches")
    r, t, take = found[0]
    seat = RecordedSeat(log, take["seat"])
    rows = table_before(log["rounds"], r, t)
    assert rows is not None
    card = log["rounds"][r]["turns"][t]["cards"][take["seat"]]
    hand = [card]
    same = _view(take["seat"], hand, rows, r, t, len(log["players"]))
    assert seat.take_row(same) == take["row"]
    assert seat.replaced_rows == 0
    # Another table (the first row one card longer): the rule no longer applies, the fallback.
    changed = (rows[0] + (104,), *rows[1:]) if 104 not in sum(rows, ()) else rows[::-1]
    other = _view(take["seat"], hand, changed, r, t, len(log["players"]))
    assert seat.take_row(other) == other.cheapest_row()
    assert seat.replaced_rows == 1


def _cheapest(rows: Any) -> int:
    return min(range(4), key=lambda i: (heads_of(rows[i]), i))


def _view(seat: int, hand: list[int], rows: Any, r: int, t: int, n: int) -> View:
    from cow006._view import new_table

    table = new_table(tuple(rows), (0,) * n, (0,) * n, (), tuple(x[0] for x in rows), r, t, n)
    return View(seat, tuple(hand), table)


def test_a_match_longer_than_recorded_is_dealt_from_the_same_seed() -> None:
    for seed in range(100):
        log = a_log(["safe", "safe", "random"], seed)
        again = rerun(log, 2, make("safe"))
        if len(again.log["rounds"]) > len(log["rounds"]):
            break
    else:
        pytest.fail("no rerun lasted longer than its recording in 100 matches")
    verify(again.log)  # the extra rounds are dealt from the log's seed: verify redeals them
    extra = [d for d in again.differences if d.round >= len(log["rounds"])]
    assert extra and all(d.recorded_card is None for d in extra)
    # In the rounds the recording never reached, the recorded seats play their lowest card.
    for rnd in again.log["rounds"][len(log["rounds"]) :]:
        hands = [list(h) for h in rnd["hands"]]
        for turn in rnd["turns"]:
            for s in (0, 1):
                assert turn["cards"][s] == min(hands[s])
                hands[s].remove(turn["cards"][s])
            hands[2].remove(turn["cards"][2])


def test_given_deals_and_settings_are_played_again() -> None:
    base = a_log(["greedy", "safe"], 9)
    deals = [(base["rounds"][0]["hands"], base["rounds"][0]["rows"])]
    log = dict(play_match([make("random"), make("greedy")], seed=1, deals=deals, settings={"x": 1}))
    again = rerun(log, 0, make("random"))
    assert again.same
    assert again.log["given_deals"] == 1 and again.log["settings"] == {"x": 1}


def test_bad_seats_and_bad_logs_are_refused() -> None:
    from cow006 import LogError, SetupError

    log = a_log(["greedy", "safe"], 2)
    with pytest.raises(SetupError, match="seats 0 to 1"):
        rerun(log, 2, make("greedy"))
    broken = json.loads(json.dumps(log))
    broken["rounds"][0]["turns"][0]["cards"][0] = 105
    with pytest.raises(LogError):
        rerun(broken, 0, make("greedy"))


# -- the command -----------------------------------------------------------------------------


def test_the_command_prints_the_differences_and_writes_the_log(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    made = runner.invoke(
        app,
        [
            "match",
            "builtin:greedy",
            "builtin:random",
            "builtin:safe",
            "--seed",
            "4",
            "-q",
            "--log",
            str(path),
        ],
    )
    assert made.exit_code == 0, made.output
    same = runner.invoke(app, ["rerun", str(path), "builtin:random", "--seat", "1"])
    assert same.exit_code == 0, same.output
    assert "no difference" in same.stdout
    out = tmp_path / "again.json"
    args = ["rerun", str(path), "builtin:lowest", "--seat", "1", "--log", str(out), "--json"]
    other = runner.invoke(app, args)
    assert other.exit_code == 0, other.output
    report = json.loads(other.stdout)
    assert report["same"] is False and report["differences"]
    verify(json.loads(out.read_text()))
    shown = runner.invoke(app, ["rerun", str(path), "builtin:lowest", "--seat", "1"])
    assert shown.exit_code == 0
    assert "recorded card" in shown.stdout and "Exact up to round" in shown.stdout
    assert f"Score {report['recorded_score']} -> {report['score']}" in shown.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--seat", "7"], "--seat must be 0 to 2"),
        (["--seat", "-1"], "--seat must be 0 to 2"),
    ],
)
def test_the_command_refuses_a_bad_seat_in_one_line(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    path = tmp_path / "m.json"
    runner.invoke(
        app, ["match", "builtin:greedy", "builtin:random", "builtin:safe", "-q", "--log", str(path)]
    )
    result = runner.invoke(app, ["rerun", str(path), "builtin:random", *args])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_hostile_recorded_name_is_printed_escaped(tmp_path: Path) -> None:
    log = a_log(["greedy", "safe"], 3)
    log["players"][0]["agent"] = "evil\x1b]52;c;aGk=\x07\x1b[2J"
    path = tmp_path / "m.json"
    path.write_text(json.dumps(log))
    result = runner.invoke(app, ["rerun", str(path), "builtin:greedy", "--seat", "0"])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "evil" in result.stdout
