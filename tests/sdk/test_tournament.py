"""Tournaments: table sampling, seat rotation, TrueSkill aggregation and ``cow006 tournament``."""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cow006 import _tournament as tour
from cow006._errors import SetupError
from cow006.cli import app

runner = CliRunner()


# -- table sampling and seat rotation ----------------------------------------------------------
@pytest.mark.parametrize(
    ("n", "k", "matches"), [(2, 2, 5), (5, 3, 40), (7, 2, 21), (13, 10, 30), (4, 4, 8)]
)
def test_schedule_seats_distinct_entrants_equally_often(n: int, k: int, matches: int) -> None:
    tables = tour.schedule(n, matches, k, seed=11)
    assert len(tables) == matches
    played = [0] * n
    for table in tables:
        assert len(table) == k
        assert len(set(table)) == k
        assert all(0 <= e < n for e in table)
        for e in table:
            played[e] += 1
        # after every match the appearance counts differ by at most one
        assert max(played) - min(played) <= 1


def test_schedule_is_deterministic_and_depends_on_seed() -> None:
    assert tour.schedule(6, 30, 3, seed=1) == tour.schedule(6, 30, 3, seed=1)
    assert tour.schedule(6, 30, 3, seed=1) != tour.schedule(6, 30, 3, seed=2)


def test_full_tables_rotate_every_entrant_through_every_seat() -> None:
    n = 4
    tables = tour.schedule(n, 8, n, seed=3)
    seats = Counter((e, seat) for table in tables for seat, e in enumerate(table))
    assert all(seats[(e, s)] == 2 for e in range(n) for s in range(n))


def test_sampled_tables_vary_the_seats() -> None:
    tables = tour.schedule(6, 60, 3, seed=4)
    seats_of_0 = Counter(table.index(0) for table in tables if 0 in table)
    assert set(seats_of_0) == {0, 1, 2}


@pytest.mark.parametrize(
    ("n", "k", "message"),
    [
        (1, 2, "at least 2 agents"),
        (3, 1, "--players must be 2 to 10"),
        (12, 11, "--players must be 2 to 10"),
        (3, 4, "more than the 3 agents"),
    ],
)
def test_check_table_rejects_impossible_tables(n: int, k: int, message: str) -> None:
    with pytest.raises(SetupError, match=message):
        tour.check_table(n, k)


def test_schedule_rejects_no_matches() -> None:
    with pytest.raises(SetupError, match="--matches"):
        tour.schedule(3, 0, 2, seed=1)


def test_match_seeds_deterministic_distinct() -> None:
    seeds = tour.match_seeds(9, 50)
    assert seeds == tour.match_seeds(9, 50)
    assert len(set(seeds)) == 50
    assert all(0 <= s < 2**63 for s in seeds)
    assert tour.match_seeds(9, 5) == seeds[:5]


def test_labels_number_repeated_specs() -> None:
    assert tour.labels(["builtin:random", "a.py", "builtin:random", "builtin:random"]) == [
        "builtin:random",
        "a.py",
        "builtin:random#2",
        "builtin:random#3",
    ]


def test_plan_carries_specs_names_and_seeds() -> None:
    specs = ["builtin:random", "builtin:greedy", "builtin:random"]
    jobs = tour.plan(specs, 6, 2, seed=5)
    assert [j.index for j in jobs] == list(range(6))
    assert [j.seed for j in jobs] == tour.match_seeds(5, 6)
    names = tour.labels(specs)
    for j in jobs:
        assert j.specs == tuple(specs[e] for e in j.entrants)
        assert j.names == tuple(names[e] for e in j.entrants)


# -- ratings -----------------------------------------------------------------------------------
def _result(entrants: tuple[int, ...], scores: tuple[int, ...]) -> tour.Result:
    ranks = tuple(1 + sum(o < s for o in scores) for s in scores)
    return tour.Result(entrants, scores, ranks, (0,) * len(entrants))


def test_rate_uses_an_explicit_environment_and_leaves_globals_alone() -> None:
    trueskill = pytest.importorskip("trueskill")
    before = trueskill.global_env()
    before_params = (before.mu, before.sigma, before.beta, before.tau, before.draw_probability)
    ratings = tour.rate([_result((0, 1), (10, 70))], 2)
    after = trueskill.global_env()
    assert (after.mu, after.sigma, after.beta, after.tau, after.draw_probability) == before_params
    assert ratings[0].mu > tour.MU > ratings[1].mu
    assert ratings[0].sigma < tour.SIGMA


def test_rate_matches_trueskill_directly() -> None:
    trueskill = pytest.importorskip("trueskill")
    results = [_result((0, 1, 2), (12, 70, 40)), _result((2, 0, 1), (66, 30, 30))]
    env = trueskill.TrueSkill(
        mu=25, sigma=25 / 3, beta=25 / 6, tau=25 / 300, draw_probability=tour.DRAW_PROBABILITY
    )
    r = [env.create_rating() for _ in range(3)]
    for res in results:
        new = env.rate([(r[e],) for e in res.entrants], ranks=list(res.ranks))
        for e, (rating,) in zip(res.entrants, new, strict=True):
            r[e] = rating
    ours = tour.rate(results, 3)
    for mine, theirs in zip(ours, r, strict=True):
        assert mine.mu == pytest.approx(theirs.mu)
        assert mine.sigma == pytest.approx(theirs.sigma)


def test_equal_totals_are_a_draw() -> None:
    pytest.importorskip("trueskill")
    a, b = tour.rate([_result((0, 1), (40, 40))], 2)
    assert a.mu == pytest.approx(b.mu)
    assert a.sigma == pytest.approx(b.sigma)


def test_standings_sorted_by_conservative_rating_with_stats() -> None:
    pytest.importorskip("trueskill")
    results = [_result((0, 1, 2), (10, 50, 70)) for _ in range(5)] + [
        _result((1, 2), (20, 20)),
    ]
    rows = tour.standings(["a", "b", "c"], results)
    assert [r.name for r in rows] == ["a", "b", "c"]
    assert [r.conservative for r in rows] == sorted((r.conservative for r in rows), reverse=True)
    a, b, c = rows
    assert a.conservative == pytest.approx(a.mu - 3 * a.sigma)
    assert (a.matches, b.matches, c.matches) == (5, 6, 6)
    assert a.mean_score == 10 and a.win_rate == 1.0
    assert b.mean_score == pytest.approx((50 * 5 + 20) / 6)
    assert b.win_rate == pytest.approx(1 / 6)  # the shared first place counts
    assert c.win_rate == pytest.approx(1 / 6)


def test_standings_with_no_matches_keep_prior() -> None:
    pytest.importorskip("trueskill")
    rows = tour.standings(["a", "b"], [])
    assert all(r.matches == 0 and r.mu == tour.MU for r in rows)


def test_module_imports_without_trueskill_at_top() -> None:
    source = Path(tour.__file__).read_text(encoding="utf-8")
    top = source.split("def rate(")[0]
    assert "import trueskill" not in top


# -- the command -------------------------------------------------------------------------------
AGENTS = ["builtin:random", "builtin:greedy", "builtin:safe"]


def _tournament(out: Path, *extra: str) -> str:
    result = runner.invoke(
        app,
        [
            "tournament",
            *AGENTS,
            "--matches",
            "6",
            "--players",
            "2",
            "--seed",
            "21",
            "--out",
            str(out),
            *extra,
        ],
    )
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.slow
def test_tournament_parallel_writes_verifiable_logs_and_leaderboard(tmp_path: Path) -> None:
    out = tmp_path / "logs"
    stdout = _tournament(out, "--jobs", "2")
    files = sorted(out.iterdir())
    assert [f.name for f in files] == [f"match-{i:05d}.json" for i in range(1, 7)]
    assert "Leaderboard" in stdout
    for name in AGENTS:
        assert name in stdout
    assert "mu-3σ" in stdout
    verified = runner.invoke(app, ["verify", *map(str, files)])
    assert verified.exit_code == 0, verified.output
    assert verified.stdout.strip() == "ok 6 logs"
    for i, f in enumerate(files):
        log = json.loads(f.read_text())
        assert len(log["players"]) == 2
        assert log["sandbox"] is False
        assert log["seed"] == tour.match_seeds(21, 6)[i]


@pytest.mark.slow
def test_tournament_is_deterministic_across_job_counts(tmp_path: Path) -> None:
    _tournament(tmp_path / "one", "--jobs", "1")
    _tournament(tmp_path / "two", "--jobs", "2")
    # The tournament seed fixes the tables and the deals; the bots' own seeds are drawn
    # afresh for every match (never from a seed a bot could guess) and recorded.
    for a, b in zip(
        sorted((tmp_path / "one").iterdir()), sorted((tmp_path / "two").iterdir()), strict=True
    ):
        la, lb = json.loads(a.read_bytes()), json.loads(b.read_bytes())
        assert (la["seed"], la["players"]) == (lb["seed"], lb["players"])
        assert la["rounds"][0]["hands"] == lb["rounds"][0]["hands"]
        assert la["agent_seeds"] != lb["agent_seeds"]
    # A plan (tables, deals and agent seeds) plays the same in one process or in many.
    plan = tour.plan(AGENTS, 4, 2, 21)
    assert [tour.run_job(job) for job in plan] == [tour.run_job(job) for job in reversed(plan)][
        ::-1
    ]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert list(pool.map(tour.run_job, plan)) == [tour.run_job(job) for job in plan]
    assert [tour.run_job(job)["agent_seeds"] for job in plan] == [
        list(job.agent_seeds or ()) for job in plan
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--players", "11"], "--players must be 2 to 10"),
        (["--players", "1"], "--players must be 2 to 10"),
        (["--players", "4"], "more than the 3 agents"),
        (["--players", "two"], "--players"),
        (["--matches", "0"], "--matches must be at least 1"),
        (["--jobs", "0"], "--jobs must be at least 1"),
    ],
)
@pytest.mark.slow
def test_tournament_bad_options_one_line(args: list[str], message: str) -> None:
    argv = ["tournament", *AGENTS, "--matches", "2", *args]
    if "--matches" in args:
        argv = ["tournament", *AGENTS, *args]
    result = runner.invoke(app, argv)
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert message in lines[0]
    assert "Traceback" not in result.output


def test_tournament_needs_two_agents() -> None:
    result = runner.invoke(app, ["tournament", "builtin:random", "--matches", "2"])
    assert result.exit_code != 0
    assert result.stderr.strip() == "error: a tournament needs at least 2 agents, not 1"
