"""Rating convergence: matches until the ladder's order is right, ladder matchmaking vs random.

A pool of agents of a known strength order (8, unless a modelled field), chosen by ``--pool``:

* ``eps`` (the default): the built-in ``greedy`` heuristic (``--base``) that plays a uniformly
  random card instead with probability eps, eps in {0, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0}
  (eps 0 is plain greedy, the strongest; eps 1 plays at random).  Equally spaced, and
  neighbours are near coin flips.
* ``builtins``: the SDK's distinct cheap built-ins and eps-mixtures of them, spanning their
  whole range, strongest first: ``safe``, ``greedy``, ``greedy`` with eps 0.2, 0.5, 0.65 and
  0.8, ``random``, ``lowest`` (``montecarlo`` is left out: about 10 ms per decision).  The
  mixtures fill the wide gap between ``greedy`` and ``random`` so that neighbours are roughly
  evenly spaced in mean rank (``BUILTINS_POOL``).
* ``thurstone``: not bots but a model of a field of any size (``--agents``), to see how the
  design scales past the 8 bots: agent k's result in a match is its strength plus standard
  normal noise, ranked; strengths ``--spacing`` apart (in units of that noise), so the order is
  known by construction and neighbours are as close as chosen (0.2: the stronger finishes ahead
  of its neighbour 56 % of the time, as the built-ins' neighbours do).

The order is first checked empirically: matches at uniformly random 4-player tables, mean rank
and mean penalty per agent.

Two scenarios, per trial and per method, each a TrueSkill ladder (explicit environment: mu 25,
sigma 25/3, beta 25/6, tau 25/300, draw probability 0.011, the platform's defaults) playing
4-player matches in-process through ``cow006.play_match``:

* ``fresh`` (the issue's benchmark): all 8 start unrated; the figure is the number of rated
  matches after which Kendall's tau between the leaderboard (by mu - 3 sigma, the platform's;
  also by mu) and the known order is >= 0.9 and stays so for the next ``--stay`` matches.  Also
  the mean number of discordant pairs over matches ``--window``/3 .. ``--window``.
* ``newcomer``: the others (7 of 8) play ``--warmup`` matches at random tables (the same for both
  methods), then agent ``trial % n`` (index 0 the strongest) joins unrated; the figure is the
  number of matches from its arrival until at most one agent is on the wrong side of it, for
  ``--stay`` more.

Methods:

* ``matchmaking``: tables from ``cow006_workers.matchmaking.plan_matches``;
* ``random``: 4 distinct agents drawn uniformly, seats in random order.

Both run through the same queue of ``--depth`` matches (default 1: one match at a time): a
table is planned when a slot frees, with the ``queued`` counts of the matches still waiting,
and results are rated in order.  Match k of a trial uses the same game seed under both methods.
A trial that does not get there within ``--max-matches`` counts as "more than the maximum"
(the median stays exact while fewer than half are cut off).  Reported: medians, quartiles, the
ratio of medians matchmaking / random with a 90 % bootstrap interval.

    python bench/convergence.py [--trials 40] [--scenario fresh|newcomer|both] [--depth 1]
                                [--pool eps|builtins|thurstone] [--agents 8] [--spacing 0.2]
                                [--max-matches 1500] [--jobs 1] [--json]
                                [--bank K] [--policy matchmaking|oracle]

Two tools for exploring designs, never used for the published figures unless said so:
``--bank K`` replays, for each table, one of K real matches recorded in advance per
4-combination of the pool (chosen by the game seed), which is about twice as fast, but biased:
matchmaking replays the few results of the few tables it favours, so its figure depends on K
(docs/matchmaking.md); ``--policy oracle`` replaces matchmaking by a bound that knows the true
order (``oracle_table``).

Target (fresh, mu - 3 sigma): matchmaking needs <= 0.6 times the matches of random tables.
Results and their reading: docs/matchmaking.md.
"""

from __future__ import annotations

import argparse
import copy
import functools
import itertools
import json
import random
import statistics
import sys
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import trueskill

from cow006 import Agent, MatchInfo, View, bots, play_match
from cow006_platform.ratings import conservative
from cow006_workers.matchmaking import Candidate, plan_matches

EPSILONS = (0.0, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0)  # index 0 strongest: the known order
PLAYERS = 4
TAU_TARGET = 0.9
# The platform's ladder defaults (cow006_platform.ratings.DEFAULT_PARAMS), spelled out so the
# benchmark does not depend on the platform package.
TS_PARAMS = {
    "mu": 25.0,
    "sigma": 25.0 / 3,
    "beta": 25.0 / 6,
    "tau": 25.0 / 300,
    "draw_probability": 0.011,
}


class EpsilonAgent(Agent):
    """A built-in bot that plays a uniformly random card instead with probability ``eps``.

    Mixing in random moves weakens a bot smoothly, so a ladder of eps values has a known
    strength order; the benchmark verifies it empirically before using it.
    """

    def __init__(self, base: str, eps: float) -> None:
        self.base = bots.make(base)
        self.eps = eps
        self.name = f"{base}-eps{eps:g}"
        self.rng = random.Random(0)

    def on_match_start(self, info: MatchInfo) -> None:
        self.base.on_match_start(info)
        # Its own stream, so the base bot's randomness is the same whatever eps is.
        self.rng = random.Random(info.seed * 7919 + 17)

    def play(self, view: View) -> int:
        if self.eps > 0 and self.rng.random() < self.eps:
            return self.rng.choice(view.hand)
        return self.base.play(view)

    def take_row(self, view: View) -> int:
        return self.base.take_row(view)


@dataclass(frozen=True)
class Member:
    """One agent of the pool: built-in ``base`` playing a random card with probability ``eps``."""

    base: str
    eps: float
    label: str
    # ``--pool thurstone``: a modelled agent of this strength instead of a bot (``play``)
    strength: float | None = None

    def agent(self) -> EpsilonAgent:
        """A fresh agent for one seat (agents keep per-match state)."""
        return EpsilonAgent(self.base, self.eps)


# A pool is a tuple of members, index 0 the strongest: the known order.
Pool = tuple[Member, ...]
POOLS = ("eps", "builtins", "thurstone")


def _mix(base: str, eps: float = 0.0) -> Member:
    return Member(base, eps, f"{base}-eps{eps:g}" if eps else base)


# ``--pool builtins``: the cheap built-ins' whole range, from the strongest (``safe``) to the
# weakest (``lowest``).  The four pure bots are fixed; the four mixtures sit where they split
# the range into roughly even steps of mean rank.  Measured once, before any convergence run,
# with ``verify_order`` on a field of 13 candidates (8000 matches, seed 777): safe 1.80,
# greedy 2.11, random 3.25, lowest 3.59, so safe..greedy and random..lowest are about one step
# each (0.26 = the range / 7) and the four mixtures go between greedy and random (greedy-eps
# 0.2: 2.35, 0.5: 2.64, 0.65: 2.85, 0.8: 3.04).  Mixtures of safe fall too close to greedy
# (safe-eps0.1: 1.97) or below it (safe-eps0.3: 2.28), which breaks the order.
BUILTINS_POOL: Pool = (
    _mix("safe"),
    _mix("greedy"),
    _mix("greedy", 0.2),
    _mix("greedy", 0.5),
    _mix("greedy", 0.65),
    _mix("greedy", 0.8),
    _mix("random"),
    _mix("lowest"),
)


def make_pool(name: str, base: str, agents: int = 8, spacing: float = 0.2) -> Pool:
    """The pool ``name`` (``POOLS``); ``base`` is the eps pool's bot, ``agents`` and
    ``spacing`` the thurstone pool's size and strength steps."""
    if name == "eps":
        return tuple(Member(base, e, f"{base}-eps{e:g}") for e in EPSILONS)
    if name == "builtins":
        return BUILTINS_POOL
    if name == "thurstone":
        return tuple(
            Member("thurstone", 0.0, f"t{k}", strength=spacing * (agents - 1 - k))
            for k in range(agents)
        )
    raise ValueError(f"unknown pool {name!r}; the pools are: {', '.join(POOLS)}")


# ``--bank K``: instead of playing, replay one of K real matches recorded per 4-combination of
# the pool (sorted agent indices -> each agent's rank, in that order).  A fast surrogate for
# exploring designs; the published figures play every match.
BANK: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
# ``--policy oracle``: the "matchmaking" slot uses the oracle below instead of plan_matches.
POLICY = "matchmaking"


def play(pool: Pool, table: Sequence[int], seed: int) -> list[int]:
    """Play one match of pool agents ``table`` (seat order); their ranks, 1 = best."""
    if BANK:
        combo = tuple(sorted(table))
        results = BANK[combo]
        rank_of = dict(zip(combo, results[seed % len(results)], strict=True))
        return [rank_of[i] for i in table]
    if pool[table[0]].strength is not None:
        return modelled_ranks([pool[i].strength or 0.0 for i in table], seed)
    log = play_match([pool[i].agent() for i in table], seed, agent_seeds=_agent_seeds(seed, table))
    return [int(r) for r in log["ranks"]]


def _agent_seeds(seed: int, table: Sequence[int]) -> list[int]:
    """The agents' own seeds, fixed by the game seed: a benchmark run is repeatable (arena
    matches draw them independently; no bot here could exploit a formula)."""
    # The runner's former formula: the figures in docs/ stay reproducible as measured.
    rng = random.Random(f"cow006-agents/{seed}")
    return [rng.getrandbits(63) for _ in table]


def modelled_ranks(strengths: Sequence[float], seed: int) -> list[int]:
    """``--pool thurstone``: each seat performs its strength plus standard normal noise; ranks
    by performance, 1 = best (ties have probability 0)."""
    rng = random.Random(seed)
    perf = [s + rng.gauss(0.0, 1.0) for s in strengths]
    order = sorted(range(len(perf)), key=lambda k: -perf[k])
    ranks = [0] * len(perf)
    for place, seat in enumerate(order, start=1):
        ranks[seat] = place
    return ranks


def build_bank(pool: Pool, k: int, seed: int) -> dict[tuple[int, ...], list[tuple[int, ...]]]:
    """``k`` real matches per 4-combination of the pool, seats shuffled, seeds drawn from
    ``seed``: each as the ranks of the combination's agents in sorted order."""
    rng = random.Random(seed)
    bank: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for combo in itertools.combinations(range(len(pool)), PLAYERS):
        rows = []
        for _ in range(k):
            seats = list(combo)
            rng.shuffle(seats)
            game = rng.getrandbits(31)
            log = play_match(
                [pool[i].agent() for i in seats], game, agent_seeds=_agent_seeds(game, seats)
            )
            rank_of = {i: int(r) for i, r in zip(seats, log["ranks"], strict=True)}
            rows.append(tuple(rank_of[i] for i in combo))
        bank[combo] = rows
    return bank


def _init_worker(bank: dict[tuple[int, ...], list[tuple[int, ...]]], policy: str) -> None:
    global POLICY
    BANK.update(bank)
    POLICY = policy


def oracle_table(ladder: Ladder, rng: random.Random) -> list[int]:
    """A bound, not a matchmaker: it knows the true order.  The table covering the most pairs
    the leaderboard (mu - 3 sigma) has in the wrong order, ties at random; random tables while
    none is wrong.  No policy that sees only the ratings can do better than knowing this."""
    board = ladder.board("conservative")
    active = sorted(ladder.active)
    wrong = [(i, j) for i in active for j in active if i < j and board[i] <= board[j]]
    if not wrong:
        return rng.sample(ladder.active, PLAYERS)
    noise = {c: rng.random() for c in itertools.combinations(active, PLAYERS)}
    best = max(noise, key=lambda c: (sum(i in c and j in c for i, j in wrong), noise[c]))
    table = list(best)
    rng.shuffle(table)
    return table


def verify_order(pool: Pool, matches: int, seed: int) -> dict[str, Any]:
    """The strength order, measured: ``matches`` uniformly random 4-player tables.

    Per agent its mean rank and mean penalty; per neighbouring pair (i, i + 1 in the known
    order) the share of their shared matches the stronger one finished ahead in (a tie counts
    half).
    """
    n = len(pool)
    rng = random.Random(seed)
    ranks: list[list[int]] = [[] for _ in pool]
    scores: list[list[int]] = [[] for _ in pool]
    ahead = [0.0] * (n - 1)
    shared = [0] * (n - 1)
    for _ in range(matches):
        table = rng.sample(range(n), PLAYERS)
        game = rng.getrandbits(31)
        log = play_match(
            [pool[i].agent() for i in table], game, agent_seeds=_agent_seeds(game, table)
        )
        rank_of = {i: int(log["ranks"][seat]) for seat, i in enumerate(table)}
        for seat, i in enumerate(table):
            ranks[i].append(rank_of[i])
            scores[i].append(int(log["scores"][seat]))
            if i + 1 in rank_of:
                shared[i] += 1
                d = rank_of[i + 1] - rank_of[i]
                ahead[i] += 1.0 if d > 0 else 0.5 if d == 0 else 0.0
    rows = []
    for i, member in enumerate(pool):
        k = len(ranks[i])
        rows.append(
            {
                "agent": member.label,
                "eps": member.eps,
                "matches": k,
                "mean_rank": statistics.fmean(ranks[i]),
                "rank_se": statistics.stdev(ranks[i]) / k**0.5,
                "mean_score": statistics.fmean(scores[i]),
                # vs the next weaker agent (None for the last)
                "ahead_of_next": ahead[i] / shared[i] if i < n - 1 and shared[i] else None,
                "shared_with_next": shared[i] if i < n - 1 else None,
            }
        )
    by_rank = sorted(range(n), key=lambda i: rows[i]["mean_rank"])
    return {"rows": rows, "ok": by_rank == list(range(n))}


def kendall_tau(values: Sequence[float]) -> float:
    """Kendall's tau-a between the known order (index 0 best) and ``values`` (higher better).

    A pair the leaderboard ties counts as neither concordant nor discordant (a fresh ladder,
    all equal, scores 0).
    """
    n = len(values)
    s = 0
    for i in range(n):
        for j in range(i + 1, n):  # i is truly stronger than j
            if values[i] > values[j]:
                s += 1
            elif values[i] < values[j]:
                s -= 1
    return s / (n * (n - 1) / 2)


class Stability:
    """Fed one verdict per match; ``reached`` becomes the first match count m (1-based) whose
    verdict and the next ``stay`` matches' verdicts are all good."""

    def __init__(self, stay: int) -> None:
        self.stay = stay
        self.run = 0  # consecutive good matches, up to now
        self.count = 0
        self.reached: int | None = None

    def add(self, good: bool) -> None:
        self.count += 1
        self.run = self.run + 1 if good else 0
        if self.reached is None and self.run == self.stay + 1:
            self.reached = self.count - self.stay


class Ladder:
    """One ladder of pool agents: TrueSkill ratings, game counts, a virtual clock (one tick per
    finished match) and a queue of planned tables, as the platform keeps them."""

    def __init__(self, pool: Pool, active: Sequence[int]) -> None:
        self.pool = pool
        self.env = trueskill.TrueSkill(**TS_PARAMS, backend=None)
        n = len(pool)
        self.ratings = [self.env.create_rating() for _ in range(n)]
        self.games = [0] * n
        self.last: list[float | None] = [None] * n
        self.queued = [0] * n
        self.active = list(active)
        self.clock = 0.0
        self.queue: deque[list[int]] = deque()

    def join(self, i: int) -> None:
        """A new version enters: prior rating, no games."""
        self.ratings[i] = self.env.create_rating()
        self.games[i], self.last[i], self.queued[i] = 0, None, 0
        self.active.append(i)

    def table(self, method: str, rng: random.Random) -> list[int]:
        if method == "random":
            return rng.sample(self.active, PLAYERS)  # the sample's order is uniform too
        if POLICY == "oracle":
            return oracle_table(self, rng)
        r, g, last, q = self.ratings, self.games, self.last, self.queued
        cands = [Candidate(i, i, i, r[i].mu, r[i].sigma, g[i], last[i], q[i]) for i in self.active]
        (table,) = plan_matches(cands, PLAYERS, 1, rng, self.clock)
        return [c.version_id for c in table]

    def step(self, method: str, rng: random.Random, depth: int, seed: int) -> None:
        """Top the queue up to ``depth`` tables, then play and rate the oldest."""
        while len(self.queue) < depth:
            table = self.table(method, rng)
            for i in table:
                self.queued[i] += 1
            self.queue.append(table)
        table = self.queue.popleft()
        ranks = play(self.pool, table, seed)
        new = self.env.rate([(self.ratings[i],) for i in table], ranks=ranks)
        self.clock += 1.0
        for i, (r,) in zip(table, new, strict=True):
            self.ratings[i] = r
            self.games[i] += 1
            self.queued[i] -= 1
            self.last[i] = self.clock

    def board(self, key: str) -> list[float]:
        """Each agent's leaderboard value (higher is better): mu - 3 sigma, or mu."""
        if key == "conservative":
            return [conservative(r.mu, r.sigma) for r in self.ratings]
        return [r.mu for r in self.ratings]


def run_fresh(
    method: str, trial: int, pool: Pool, max_matches: int, stay: int, depth: int, window: int
) -> dict[str, Any]:
    """A fresh ladder of all 8 under ``method``: matches to a stable tau (by mu - 3 sigma and by
    mu), and the mean number of discordant pairs (mu - 3 sigma) over matches window/3..window."""
    n = len(pool)
    ladder = Ladder(pool, range(n))
    game_seeds = random.Random(f"games:{trial}")  # the same match seeds under both methods
    rng = random.Random(f"{method}:{trial}")
    by_c, by_mu = Stability(stay), Stability(stay)
    pairs = n * (n - 1) // 2
    discordant: list[float] = []
    while by_c.count < max_matches:
        ladder.step(method, rng, depth, game_seeds.getrandbits(31))
        tau = kendall_tau(ladder.board("conservative"))
        by_c.add(tau >= TAU_TARGET)
        by_mu.add(kendall_tau(ladder.board("mu")) >= TAU_TARGET)
        if window // 3 < by_c.count <= window:
            discordant.append((1 - tau) * pairs / 2)  # no ties once ratings moved
        if by_c.reached and by_mu.reached and by_c.count >= window:
            break
    return {
        "scenario": "fresh",
        "method": method,
        "trial": trial,
        "conservative": by_c.reached,
        "mu": by_mu.reached,
        "discordant": statistics.fmean(discordant) if discordant else None,
    }


def misplaced(values: Sequence[float], i: int) -> int:
    """How many agents ``values`` puts on the wrong side of agent ``i`` (index order = truth)."""
    return sum(
        1
        for j in range(len(values))
        if j != i and (values[j] >= values[i] if j > i else values[j] <= values[i])
    )


@functools.lru_cache(maxsize=2)
def warm_ladder(pool: Pool, trial: int, newcomer: int, warmup: int) -> Ladder:
    """The others after ``warmup`` matches at uniformly random tables: a settled ladder.
    The same for both methods (it depends on the trial only), so played once per trial and
    copied (``run_all`` runs a trial's two methods one after the other)."""
    ladder = Ladder(pool, [i for i in range(len(pool)) if i != newcomer])
    seeds = random.Random(f"warmup-games:{trial}")
    rng = random.Random(f"warmup:{trial}")
    for _ in range(warmup):
        ladder.step("random", rng, 1, seeds.getrandbits(31))
    return ladder


def run_newcomer(
    method: str, trial: int, pool: Pool, max_matches: int, stay: int, depth: int, warmup: int
) -> dict[str, Any]:
    """A newcomer (agent ``trial % n``) joins a settled ladder of the others: matches from
    its arrival until at most one agent is on the wrong side of it, for ``stay`` more matches
    (by mu - 3 sigma and by mu).  Also its share of the first 40 matches."""
    newcomer = trial % len(pool)
    ladder = copy.deepcopy(warm_ladder(pool, trial, newcomer, warmup))
    ladder.join(newcomer)
    game_seeds = random.Random(f"games:{trial}")
    rng = random.Random(f"{method}:{trial}")
    by_c, by_mu = Stability(stay), Stability(stay)
    played_40: int | None = None
    while by_c.count < max_matches:
        ladder.step(method, rng, depth, game_seeds.getrandbits(31))
        by_c.add(misplaced(ladder.board("conservative"), newcomer) <= 1)
        by_mu.add(misplaced(ladder.board("mu"), newcomer) <= 1)
        if by_c.count == 40:
            played_40 = ladder.games[newcomer]
        if by_c.reached and by_mu.reached and by_c.count >= 40:
            break
    return {
        "scenario": "newcomer",
        "method": method,
        "trial": trial,
        "newcomer": newcomer,
        "conservative": by_c.reached,
        "mu": by_mu.reached,
        "played_of_first_40": played_40,
    }


def summarize(values: Sequence[int | None], max_matches: int) -> dict[str, Any]:
    """Median and quartiles, a trial that never got there counted as max_matches + 1."""
    xs = sorted(max_matches + 1 if v is None else v for v in values)
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return {
        "median": statistics.median(xs),
        "q1": q[0],
        "q3": q[2],
        "not_converged": sum(v is None for v in values),
        "runs": list(values),
    }


def ratio_interval(
    mine: Sequence[float], base: Sequence[float], reps: int = 2000, seed: int = 1
) -> tuple[float, float]:
    """A 90 % bootstrap interval of median(mine) / median(base), trials resampled per method."""
    rng = random.Random(seed)
    ratios = sorted(
        statistics.median(rng.choices(mine, k=len(mine)))
        / statistics.median(rng.choices(base, k=len(base)))
        for _ in range(reps)
    )
    return ratios[int(0.05 * reps)], ratios[int(0.95 * reps) - 1]


METHODS = ("matchmaking", "random")
KEYS = (("conservative", "mu - 3 sigma"), ("mu", "mu"))


def compare(results: Sequence[dict[str, Any]], max_matches: int) -> dict[str, Any]:
    """Per leaderboard key: both methods' summaries, the ratio of medians and its interval."""
    out: dict[str, Any] = {}
    cut = max_matches + 1
    for key, _ in KEYS:
        per: dict[str, Any] = {
            m: summarize([r[key] for r in results if r["method"] == m], max_matches)
            for m in METHODS
        }
        per["ratio"] = per["matchmaking"]["median"] / per["random"]["median"]
        per["ratio_90"] = ratio_interval(
            *([r[key] or cut for r in results if r["method"] == m] for m in METHODS)
        )
        out[key] = per
    return out


def print_comparison(title: str, comparison: dict[str, Any]) -> None:
    print(title)
    for key, label in KEYS:
        print(f"  leaderboard by {label}:")
        for m in METHODS:
            s = comparison[key][m]
            cut = f", {s['not_converged']} cut off" if s["not_converged"] else ""
            print(
                f"    {m:<12} median {s['median']:7.1f}  "
                f"(quartiles {s['q1']:.0f}-{s['q3']:.0f}{cut})"
            )
        lo, hi = comparison[key]["ratio_90"]
        print(
            f"    ratio matchmaking / random: {comparison[key]['ratio']:.2f} "
            f"(90 % bootstrap interval {lo:.2f}-{hi:.2f})"
        )


def run_all(fn: Any, trials: range, jobs: int, rest: tuple[Any, ...]) -> list[dict[str, Any]]:
    """``fn(method, trial, *rest)`` for every trial and method, in ``jobs`` processes."""
    calls = [(m, t, *rest) for t in trials for m in METHODS]
    if jobs > 1:
        with ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(BANK, POLICY)) as pool:
            return list(pool.map(fn, *zip(*calls, strict=True)))
    return [fn(*call) for call in calls]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--trials",
        type=int,
        default=40,
        help="independent ladders per method (0: only the strength order check)",
    )
    ap.add_argument(
        "--first-trial", type=int, default=0, help="index of the first trial (replicates)"
    )
    ap.add_argument("--max-matches", type=int, default=1500, help="cut-off per trial")
    ap.add_argument("--stay", type=int, default=20, help="matches the verdict must then hold")
    ap.add_argument("--depth", type=int, default=1, help="queue depth (1: one at a time)")
    ap.add_argument(
        "--window",
        type=int,
        default=300,
        help="fresh: every trial plays at least this many matches; the mean number of "
        "discordant pairs is taken over the last two thirds of them (0: stop at convergence)",
    )
    ap.add_argument(
        "--scenario", choices=["fresh", "newcomer", "both"], default="both", help="what to run"
    )
    ap.add_argument("--warmup", type=int, default=200, help="newcomer: matches of the others first")
    ap.add_argument(
        "--pool",
        choices=POOLS,
        default="eps",
        help="the 8 agents: eps = one built-in (--base) mixed with random moves at 8 eps "
        "levels; builtins = the cheap built-ins (safe, greedy, random, lowest) and "
        "eps-mixtures of them, spanning their whole range",
    )
    ap.add_argument(
        "--base",
        choices=["greedy", "safe"],
        default=None,
        help="--pool eps only: the bot the eps levels mix with random moves (default greedy)",
    )
    ap.add_argument(
        "--agents", type=int, default=8, help="--pool thurstone only: the size of the field"
    )
    ap.add_argument(
        "--spacing",
        type=float,
        default=0.2,
        help="--pool thurstone only: strength steps between neighbours, in units of one "
        "match's performance noise",
    )
    ap.add_argument("--verify", type=int, default=2000, help="matches of the order check")
    ap.add_argument("--jobs", type=int, default=1, help="processes (the runs are independent)")
    ap.add_argument(
        "--bank",
        type=int,
        default=0,
        help="surrogate: replay one of this many real matches recorded per 4-combination "
        "instead of playing (0: play every match, as the published figures do)",
    )
    ap.add_argument(
        "--policy",
        choices=["matchmaking", "oracle"],
        default="matchmaking",
        help="what the matchmaking side uses: plan_matches, or the oracle bound (knows the "
        "true order: the table with the most wrongly ordered pairs)",
    )
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    if args.base is not None and args.pool != "eps":
        ap.error(f"--base applies to --pool eps only, not to --pool {args.pool}")
    modelled = args.pool == "thurstone"
    if not modelled and (args.agents != 8 or args.spacing != 0.2):
        ap.error(
            f"--agents and --spacing apply to --pool thurstone only, not to --pool {args.pool}"
        )
    if args.agents < PLAYERS + 1 or args.spacing <= 0:
        ap.error(f"--agents must be at least {PLAYERS + 1} and --spacing positive")
    if args.policy == "oracle" and args.agents > 12:
        ap.error("--policy oracle tries every table each match: at most 12 agents")
    if modelled and args.bank > 0:
        ap.error("--bank replays recorded bot matches: not for --pool thurstone")
    pool = make_pool(args.pool, args.base or "greedy", args.agents, args.spacing)
    labels = [m.label for m in pool]
    t0 = time.perf_counter()
    global POLICY
    POLICY = args.policy
    BANK.clear()
    if args.bank > 0:
        BANK.update(build_bank(pool, args.bank, seed=99))

    # A modelled field's order holds by construction: there are no bots to check.
    check = (
        verify_order(pool, args.verify, seed=12345) if args.verify > 0 and not modelled else None
    )
    if check is not None and not args.json:
        width = max(len(label) for label in labels)
        print(
            f"strength order check, pool {args.pool}: {args.verify} random {PLAYERS}-player tables"
        )
        print(
            f"  {'agent':<{width}}  matches  mean rank (±se)  mean penalty  "
            "ahead of the next (shared)"
        )
        for row in check["rows"]:
            nxt = ""
            if row["ahead_of_next"] is not None:
                nxt = f"{row['ahead_of_next']:.3f} ({row['shared_with_next']})"
            print(
                f"  {row['agent']:<{width}}  {row['matches']:7d}  {row['mean_rank']:.3f} "
                f"(±{row['rank_se']:.3f})  {row['mean_score']:12.1f}  {nxt}"
            )
        print(f"  mean rank follows the known order: {'yes' if check['ok'] else 'NO'}")

    summary: dict[str, Any] = {
        "players": PLAYERS,
        "pool": args.pool,
        "spacing": args.spacing if modelled else None,
        "agents": labels,  # index 0 the strongest: the known order
        "trueskill": TS_PARAMS,
        "trials": args.trials,
        "first_trial": args.first_trial,
        "max_matches": args.max_matches,
        "stay": args.stay,
        "depth": args.depth,
        "bank": args.bank,
        "policy": args.policy,
        "order_check": check,
    }
    common = (pool, args.max_matches, args.stay, args.depth)
    trials = range(args.first_trial, args.first_trial + args.trials)
    if args.trials > 0 and args.scenario in ("fresh", "both"):
        fresh = run_all(run_fresh, trials, args.jobs, (*common, args.window))
        summary["fresh"] = compare(fresh, args.max_matches)
        summary["fresh"]["window"] = args.window
        if args.window > 0:
            summary["fresh"]["discordant"] = {
                m: statistics.fmean(r["discordant"] for r in fresh if r["method"] == m)
                for m in METHODS
            }
    if args.trials > 0 and args.scenario in ("newcomer", "both"):
        newc = run_all(run_newcomer, trials, args.jobs, (*common, args.warmup))
        summary["newcomer"] = compare(newc, args.max_matches)
        summary["newcomer"]["warmup"] = args.warmup
        summary["newcomer"]["played_of_first_40"] = {
            m: statistics.fmean(r["played_of_first_40"] for r in newc if r["method"] == m)
            for m in METHODS
        }
        # median matches (mu - 3 sigma) per newcomer strength: a weak newcomer is "placed" at
        # once (it starts at the bottom of the board, mu - 3 sigma = 0), a strong one must climb
        cut = args.max_matches + 1
        summary["newcomer"]["by_newcomer"] = {
            label: {
                m: statistics.median(
                    r["conservative"] or cut
                    for r in newc
                    if r["method"] == m and r["newcomer"] == i
                )
                for m in METHODS
            }
            for i, label in enumerate(labels)
            if any(r["newcomer"] == i for r in newc)
        }
    summary["seconds"] = round(time.perf_counter() - t0, 1)

    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    setup = (
        f"pool {args.pool}{f' (spacing {args.spacing:g})' if modelled else ''}, "
        f"{args.trials} trials, queue depth {args.depth}, cut-off {args.max_matches}"
    )
    if args.bank > 0:
        setup += f"; SURROGATE: replayed from {args.bank} matches per table"
    if args.policy != "matchmaking":
        setup += f"; the 'matchmaking' rows are the {args.policy.upper()} policy"
    if "fresh" in summary:
        print_comparison(
            f"\nfresh ladder of {len(pool)}: matches until Kendall tau >= {TAU_TARGET} and stays "
            f"so for {args.stay} more matches; {setup}",
            summary["fresh"],
        )
        if args.window > 0:
            d = summary["fresh"]["discordant"]
            pairs = len(pool) * (len(pool) - 1) // 2
            print(
                f"  discordant pairs of {pairs} by mu - 3 sigma, mean over matches "
                f"{args.window // 3 + 1}-{args.window}: matchmaking {d['matchmaking']:.2f}, "
                f"random {d['random']:.2f}"
            )
    if "newcomer" in summary:
        print_comparison(
            f"\nnewcomer on a settled ladder ({len(pool) - 1} agents, {args.warmup} matches "
            f"first): matches until at most one agent is on the wrong side of it, for "
            f"{args.stay} more; {setup}",
            summary["newcomer"],
        )
        p = summary["newcomer"]["played_of_first_40"]
        print(
            f"  the newcomer's games in its first 40 matches: matchmaking "
            f"{p['matchmaking']:.1f}, random {p['random']:.1f}"
        )
        print("  median matches (mu - 3 sigma) by the newcomer, matchmaking / random:")
        print(
            "    "
            + "  ".join(
                f"{label}: {v['matchmaking']:g}/{v['random']:g}"
                for label, v in summary["newcomer"]["by_newcomer"].items()
            )
        )
    print(f"\n({summary['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
