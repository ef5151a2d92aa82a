"""The figures of an evaluation run: means with 95 % intervals, paired and unpaired.

Each slot of a run plays the version (B) and, if asked, its baseline (A) on the same deals,
seats and opponents.  The paired difference (B - A per slot, then its mean) cancels what the
slot itself decides (a deal that is hard for anyone), so its interval is narrower than the
unpaired one (Welch's, from the two samples as if independent) on the same matches.  Pure
arithmetic, no database: ``crud.evaluations`` hands it the numbers.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Student's t, 97.5 % quantile, by degrees of freedom (1..30); past 30 the normal's 1.96
# plus the first correction term is within 0.3 % of it.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: float) -> float:
    """Student's t 97.5 % quantile for ``df`` degrees of freedom (a fractional df, as
    Welch's gives, is rounded down: the wider interval)."""
    if df < 1:
        return math.inf
    if df <= len(_T975):
        return _T975[int(df) - 1]
    return 1.96 + 2.4 / df


@dataclass(frozen=True)
class Interval:
    """A mean and its 95 % interval (``low``/``high`` None with fewer than two values)."""

    mean: float | None
    low: float | None
    high: float | None
    n: int

    @property
    def width(self) -> float | None:
        return None if self.low is None or self.high is None else self.high - self.low


def mean_interval(values: Sequence[float]) -> Interval:
    """The mean of ``values`` with its t interval."""
    n = len(values)
    if n == 0:
        return Interval(None, None, None, 0)
    mean = statistics.fmean(values)
    if n < 2:
        return Interval(mean, None, None, n)
    half = t975(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


def paired(b: Sequence[float], a: Sequence[float]) -> Interval:
    """The mean of ``b[i] - a[i]`` with its interval: the paired comparison."""
    return mean_interval([x - y for x, y in zip(b, a, strict=True)])


def unpaired(b: Sequence[float], a: Sequence[float]) -> Interval:
    """``mean(b) - mean(a)`` with Welch's interval, as if the samples were independent."""
    if not b or not a:
        return Interval(None, None, None, 0)
    diff = statistics.fmean(b) - statistics.fmean(a)
    if len(b) < 2 or len(a) < 2:
        return Interval(diff, None, None, min(len(a), len(b)))
    vb, va = statistics.variance(b) / len(b), statistics.variance(a) / len(a)
    se = math.sqrt(vb + va)
    if se == 0:
        return Interval(diff, diff, diff, min(len(a), len(b)))
    df = (vb + va) ** 2 / (vb**2 / (len(b) - 1) + va**2 / (len(a) - 1))
    half = t975(df) * se
    return Interval(diff, diff - half, diff + half, min(len(a), len(b)))
