"""bench/bots.py ``--field``: its interval math against published values, one real match."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_bots", ROOT / "bench" / "bots.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_bots"] = mod
    spec.loader.exec_module(mod)
    return mod


bots = _bench()


# Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I,
# method 3 (the Wilson score interval without continuity correction), 95 %.
@pytest.mark.parametrize(
    ("wins", "n", "low", "high"),
    [
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_published_intervals(wins: int, n: int, low: float, high: float) -> None:
    lo, hi = bots.wilson(wins, n)
    assert lo == pytest.approx(low, abs=1e-4)
    assert hi == pytest.approx(high, abs=1e-4)


def test_wilson_edges() -> None:
    assert bots.wilson(0, 0) == (0.0, 1.0)
    lo, hi = bots.wilson(20, 20)
    assert hi == 1.0 and lo == pytest.approx(1 - 0.1611, abs=1e-4)  # the mirror of 0/20
    lo, hi = bots.wilson(5, 10)
    assert lo + hi == pytest.approx(1.0)  # symmetric around 1/2


def test_mean_ci() -> None:
    m, lo, hi = bots.mean_ci([1, 2, 3, 4, 5])
    # sd = sqrt(2.5); half-width = 1.959964 * sqrt(2.5) / sqrt(5) = 1.385904
    assert m == 3.0
    assert lo == pytest.approx(3 - 1.385904, abs=1e-6)
    assert hi == pytest.approx(3 + 1.385904, abs=1e-6)
    assert bots.mean_ci([7.0]) == (7.0, 7.0, 7.0)
    assert bots.mean_ci([]) == (0.0, 0.0, 0.0)


def test_field_names() -> None:
    # Issue 19's "best" field is three copies of the best of that day, montecarlo-v1.
    assert bots.field_name("best") == "montecarlo-v1"
    assert bots.field_name("builtin:best") == "montecarlo-v1"
    assert bots.field_name("greedy") == "greedy"
    assert bots.field_name("montecarlo-v1") == "montecarlo-v1"


def _result(rank: int, tied: bool, deals: list[int], cpu_ms: float) -> dict:
    return {
        "rank": rank,
        "tied": tied,
        "score": sum(deals),
        "deals": deals,
        "field_deals": [10, 20],
        "wall": [cpu_ms / 1000] * 2,
        "cpu": [cpu_ms / 1000] * 2,
    }


def test_field_summary_counts_and_targets() -> None:
    res = [
        _result(1, False, [4, 6], 5.0),
        _result(1, True, [5, 5], 5.0),
        _result(3, False, [9, 11], 5.0),
        _result(2, False, [6, 6], 5.0),
    ]
    out = bots.field_summary("best", "greedy", res)
    assert out["matches"] == 4 and out["deals"] == 8
    assert out["win_rate"] == 0.5 and out["strict_win_rate"] == 0.25
    lo, hi = bots.wilson(2, 4)
    assert out["win_ci95"] == [round(lo, 4), round(hi, 4)]
    assert out["heads_per_deal"] == 6.5  # 52 heads over 8 deals
    assert out["field_heads_per_deal"] == 15.0
    assert out["median_cpu_ms"] == 5.0
    assert out["ok"] is False  # 50 % < the 70 % target against greedy
    wins = [_result(1, False, [4, 6], 5.0)] * 4
    assert bots.field_summary("best", "greedy", wins)["ok"] is True
    slow = [_result(1, False, [4, 6], 25.0)] * 4
    assert bots.field_summary("best", "greedy", slow)["ok"] is False  # median over 20 ms


def test_one_field_match_is_a_full_match() -> None:
    # greedy against three random: cheap, and a real match to 66.
    r = bots._one_field(("greedy", "random", 5, 77))
    assert sum(r["deals"]) == r["score"]
    assert len(r["field_deals"]) == 3 * len(r["deals"])
    assert len(r["wall"]) == len(r["cpu"]) >= 10 * len(r["deals"])
    # The match ended because some total reached 66, not before.
    totals = [r["score"], 0, 0, 0]
    for i, p in enumerate(r["field_deals"]):
        totals[1 + i % 3] += p
    assert max(totals) >= 66
