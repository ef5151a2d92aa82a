"""Rating convergence: matches until the ladder's order is right, ladder matchmaking vs random.

A pool of 8 agents of a known strength order: the built-in ``greedy`` heuristic that plays a
uniformly random card instead with probability eps, eps in {0, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8,
1.0} (eps 0 is plain greedy, the strongest; eps 1 plays at random).  The order is first checked
empirically: matches at uniformly random 4-player tables, mean rank and mean penalty per agent.

Then, per trial and per method, a fresh TrueSkill ladder (explicit environment: mu 25, sigma
25/3, beta 25/6, tau 25/300, draw probability 0.011, the platform's defaults) plays 4-player
matches in-process through ``cow006.play_match`` until the leaderboard is right:

* ``matchmaking``: tables from ``cow006_workers.matchmaking.plan_matches``;
* ``random``: 4 distinct agents drawn uniformly, seats shuffled.

Both run through the same queue of ``--depth`` matches (1: one match at a time): a table is
planned when a slot frees, with the ``queued`` counts of the matches still waiting, and results
are rated in order.  Match k of a trial uses the same game seed under both methods.  The
figure is the number of rated matches after which Kendall's tau between the leaderboard
(by mu - 3 sigma, the platform's; also by mu) and the known order is >= 0.9 and stays so for
the next ``--stay`` matches.  A trial that does not get there within ``--max-matches`` counts
as "more than the maximum" (the median stays exact while fewer than half are cut off).

    python bench/convergence.py [--trials 20] [--max-matches 1500] [--depth 1] [--json]

Target: matchmaking needs <= 0.6 times the matches of random tables (median, mu - 3 sigma).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import trueskill

from cow006 import Agent, MatchInfo, View, bots, play_match
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


def play(base: str, table: Sequence[int], seed: int) -> list[int]:
    """Play one match of pool agents ``table`` (seat order); their ranks, 1 = best."""
    log = play_match([EpsilonAgent(base, EPSILONS[i]) for i in table], seed)
    return [int(r) for r in log["ranks"]]


def verify_order(base: str, matches: int, seed: int) -> dict[str, Any]:
    """Mean rank and mean penalty of each agent over ``matches`` random 4-player tables."""
    rng = random.Random(seed)
    ranks: list[list[int]] = [[] for _ in EPSILONS]
    scores: list[list[int]] = [[] for _ in EPSILONS]
    for _ in range(matches):
        table = rng.sample(range(len(EPSILONS)), PLAYERS)
        log = play_match([EpsilonAgent(base, EPSILONS[i]) for i in table], rng.getrandbits(31))
        for seat, i in enumerate(table):
            ranks[i].append(int(log["ranks"][seat]))
            scores[i].append(int(log["scores"][seat]))
    rows = []
    for i, eps in enumerate(EPSILONS):
        n = len(ranks[i])
        rows.append(
            {
                "eps": eps,
                "matches": n,
                "mean_rank": statistics.fmean(ranks[i]),
                "rank_se": statistics.stdev(ranks[i]) / n**0.5,
                "mean_score": statistics.fmean(scores[i]),
            }
        )
    by_rank = sorted(range(len(EPSILONS)), key=lambda i: rows[i]["mean_rank"])
    return {"rows": rows, "ok": by_rank == list(range(len(EPSILONS)))}


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
    """Feed taus one per match; ``reached`` becomes the first match count m (1-based) whose tau
    and the next ``stay`` matches' are all >= the target."""

    def __init__(self, stay: int) -> None:
        self.stay = stay
        self.run = 0  # consecutive matches at or above the target, up to now
        self.count = 0
        self.reached: int | None = None

    def add(self, tau: float) -> None:
        self.count += 1
        self.run = self.run + 1 if tau >= TAU_TARGET else 0
        if self.reached is None and self.run == self.stay + 1:
            self.reached = self.count - self.stay


def run_trial(
    method: str, trial: int, base: str, max_matches: int, stay: int, depth: int
) -> dict[str, Any]:
    """One fresh ladder under ``method``; matches to a stable tau by mu - 3 sigma and by mu."""
    env = trueskill.TrueSkill(**TS_PARAMS, backend=None)
    n = len(EPSILONS)
    ratings = [env.create_rating() for _ in range(n)]
    games = [0] * n
    last: list[float | None] = [None] * n
    queued = [0] * n
    game_seeds = random.Random(f"games:{trial}")  # the same match seeds under both methods
    mm_rng = random.Random(f"{method}:{trial}")
    clock = 0.0  # virtual time: one tick per finished match

    def next_table() -> list[int]:
        if method == "random":
            table = mm_rng.sample(range(n), PLAYERS)  # sample order is already uniform
            return table
        cands = [
            Candidate(i, i, i, ratings[i].mu, ratings[i].sigma, games[i], last[i], queued[i])
            for i in range(n)
        ]
        (table,) = plan_matches(cands, PLAYERS, 1, mm_rng, clock)
        return [c.version_id for c in table]

    queue: deque[list[int]] = deque()
    by_c, by_mu = Stability(stay), Stability(stay)
    while by_c.count < max_matches:
        while len(queue) < depth:
            table = next_table()
            for i in table:
                queued[i] += 1
            queue.append(table)
        table = queue.popleft()
        ranks = play(base, table, game_seeds.getrandbits(31))
        new = env.rate([(ratings[i],) for i in table], ranks=ranks)
        clock += 1.0
        for i, (r,) in zip(table, new, strict=True):
            ratings[i] = r
            games[i] += 1
            queued[i] -= 1
            last[i] = clock
        by_c.add(kendall_tau([r.mu - 3 * r.sigma for r in ratings]))
        by_mu.add(kendall_tau([r.mu for r in ratings]))
        if by_c.reached and by_mu.reached:
            break
    return {"method": method, "trial": trial, "conservative": by_c.reached, "mu": by_mu.reached}


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


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20, help="independent ladders per method")
    ap.add_argument("--max-matches", type=int, default=1500, help="cut-off per trial")
    ap.add_argument("--stay", type=int, default=20, help="matches tau must then stay >= 0.9")
    ap.add_argument("--depth", type=int, default=1, help="queue depth (1: one at a time)")
    ap.add_argument("--base", default="greedy", choices=["greedy", "safe"])
    ap.add_argument("--verify", type=int, default=1000, help="matches of the order check")
    ap.add_argument("--jobs", type=int, default=1, help="processes (the runs are independent)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()

    check = verify_order(args.base, args.verify, seed=12345) if args.verify > 0 else None
    if check is not None and not args.json:
        print(f"strength order check: {args.verify} random {PLAYERS}-player tables")
        print("  eps    matches  mean rank (±se)  mean penalty")
        for row in check["rows"]:
            print(
                f"  {row['eps']:<5g}  {row['matches']:7d}  {row['mean_rank']:.3f} "
                f"(±{row['rank_se']:.3f})  {row['mean_score']:6.1f}"
            )
        print(f"  mean rank increases with eps: {'yes' if check['ok'] else 'NO'}")

    jobs = [
        (m, t, args.base, args.max_matches, args.stay, args.depth)
        for t in range(args.trials)
        for m in ("matchmaking", "random")
    ]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(run_trial, *zip(*jobs, strict=True)))
    else:
        results = [run_trial(*job) for job in jobs]

    summary: dict[str, Any] = {
        "players": PLAYERS,
        "pool": [f"{args.base}-eps{e:g}" for e in EPSILONS],
        "trueskill": TS_PARAMS,
        "trials": args.trials,
        "max_matches": args.max_matches,
        "stay": args.stay,
        "depth": args.depth,
        "order_check": check,
    }
    for key in ("conservative", "mu"):
        per = {
            m: summarize([r[key] for r in results if r["method"] == m], args.max_matches)
            for m in ("matchmaking", "random")
        }
        per["ratio"] = per["matchmaking"]["median"] / per["random"]["median"]
        summary[key] = per
    summary["seconds"] = round(time.perf_counter() - t0, 1)

    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"\nmatches until Kendall tau >= {TAU_TARGET} for {args.stay} more matches; "
            f"{args.trials} trials, queue depth {args.depth}, cut-off {args.max_matches}"
        )
        for key, label in (("conservative", "mu - 3 sigma"), ("mu", "mu")):
            print(f"  leaderboard by {label}:")
            for m in ("matchmaking", "random"):
                s = summary[key][m]
                cut = f", {s['not_converged']} cut off" if s["not_converged"] else ""
                print(
                    f"    {m:<12} median {s['median']:7.1f}  "
                    f"(quartiles {s['q1']:.0f}-{s['q3']:.0f}{cut})"
                )
            print(f"    ratio matchmaking / random: {summary[key]['ratio']:.2f}")
        print(f"  ({summary['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
