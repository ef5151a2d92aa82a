"""Built-in bots benchmark: how often ``builtin:best`` wins against three ``builtin:random``.

Default mode: ``--matches`` four-player matches, ``best`` at seat ``i % 4`` in match ``i`` (seed
``--seed + i``), the other seats ``random``.  A match is won when ``best`` ends with rank 1
("shared": a tie for first counts; "strict": alone in first).  Every ``play``/``take_row`` call
of ``best`` is timed with ``time.perf_counter`` (wall clock, what a time limit sees) and with
``time.process_time`` (CPU time of its process, which other load on a shared machine barely
moves).  Each job is one single-threaded process, i.e. one core.
Targets: win rate (shared) >= 82 % and median decision time <= 25 ms.

``--field NAME``: one candidate (``--candidate``, default ``best``) against three copies of the
built-in ``NAME`` (a fixed field), seats rotating, full matches to 66: match win rate with a
Wilson 95 % interval, heads per deal with a 95 % interval, decision time median and p95 (wall
and CPU).  ``--field best`` is the field of issue 19: three copies of the ``best`` of that
issue's day, kept as ``builtin:montecarlo-v1`` (so ``--field best`` and ``--field
montecarlo-v1`` are the same field; for three copies of today's ``best`` there is no field
name, by design: a bot against itself is parity).

``--table``: the win-rate table of all built-ins published in docs/builtins.md: each built-in
against three ``random``, then a mixed round-robin of the distinct built-ins at four-player
tables (every combination of four, every rotation of the seats).

    python bench/bots.py [--matches N] [--jobs J] [--seed S] [--json]
    python bench/bots.py --field greedy|safe|best|NAME [--candidate NAME] [--matches N]
                         [--jobs J] [--seed S] [--results FILE] [--json]
    python bench/bots.py --summarize FILE [FILE ...] [--json]
    python bench/bots.py --table [--matches N] [--rr-matches M] [--jobs J] [--seed S] [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from cow006 import Agent, MatchInfo, View, play_match
from cow006.bots import BUILTINS, make

TARGET_WIN = 0.82
TARGET_MEDIAN_MS = 25.0
# Built-in names that are aliases of another one: left out of the round-robin.
ALIASES = {"montecarlo": "montecarlo-v1"}
# ``--field`` names that mean another built-in: ``best`` is issue 19's "today's best".
FIELD_ALIASES = {"best": "montecarlo-v1", "montecarlo": "montecarlo-v1"}
# Issue 19's targets for the candidate, per field (one run, one core per job).
FIELD_TARGETS: dict[str, dict[str, float]] = {
    "greedy": {"max_heads_per_deal": 7.5, "min_win_rate": 0.70},
    "montecarlo-v1": {"min_win_rate": 0.35},
}
FIELD_MEDIAN_MS = 20.0
Z95 = 1.959963984540054  # the two-sided 95 % normal quantile


class Timed(Agent):
    """Wraps an agent and records the wall and CPU seconds of each of its decisions."""

    def __init__(self, inner: Agent) -> None:
        self.inner = inner
        self.name = inner.name
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def on_match_start(self, info: MatchInfo) -> None:
        self.inner.on_match_start(info)

    def on_round_start(self, view: View) -> None:
        self.inner.on_round_start(view)

    def on_round_end(self, result: dict[str, Any]) -> None:
        self.inner.on_round_end(result)

    def on_match_end(self, result: dict[str, Any]) -> None:
        self.inner.on_match_end(result)

    def play(self, view: View) -> int:
        return self._timed(self.inner.play, view)

    def take_row(self, view: View) -> int:
        return self._timed(self.inner.take_row, view)

    def _timed(self, decide: Callable[[View], int], view: View) -> int:
        c0, t0 = time.process_time(), time.perf_counter()
        answer = decide(view)
        self.wall.append(time.perf_counter() - t0)
        self.cpu.append(time.process_time() - c0)
        return answer


def distinct() -> list[str]:
    """The built-ins that are not aliases of another one."""
    return [n for n in BUILTINS if n not in ALIASES]


def _label(name: str) -> str:
    aliases = [a for a, target in ALIASES.items() if target == name]
    return f"builtin:{name}" + "".join(f" (= builtin:{a})" for a in aliases)


def bench_agent_seeds(seed: int, n: int) -> list[int]:
    """The agents' own seeds of a benchmark match, fixed by its seed so a run is repeatable.

    Arena and ``cow006 match`` seeds are drawn independently (a bot must not derive them);
    a benchmark of built-ins has no such bot, and its figures should be reproducible.
    """
    # The runner's former formula: the figures in docs/ stay reproducible as measured.
    rng = random.Random(f"cow006-agents/{seed}")
    return [rng.getrandbits(63) for _ in range(n)]


def _one_vs_random(task: tuple[str, int, int]) -> dict[str, Any]:
    """One match: builtin ``name`` at seat ``i % 4`` against three random; its result."""
    name, i, seed = task
    seat = i % 4
    me = Timed(make(name))
    agents: list[Agent] = [make("random") for _ in range(4)]
    agents[seat] = me
    log = play_match(agents, seed, agent_seeds=bench_agent_seeds(seed, len(agents)))
    scores = log["scores"]
    return {
        "rank": log["ranks"][seat],
        "tied": scores.count(scores[seat]) > 1,
        "score": scores[seat],
        "others": [s for k, s in enumerate(scores) if k != seat],
        "wall": me.wall,
        "cpu": me.cpu,
    }


def _one_table(task: tuple[tuple[str, ...], int]) -> dict[str, Any]:
    """One round-robin match: the built-ins in seat order; every seat's score and rank."""
    lineup, seed = task
    log = play_match(
        [make(n) for n in lineup], seed, agent_seeds=bench_agent_seeds(seed, len(lineup))
    )
    return {"lineup": lineup, "scores": log["scores"], "ranks": log["ranks"]}


def _map(fn: Any, tasks: Sequence[Any], jobs: int) -> list[Any]:
    if jobs <= 1:
        return [fn(t) for t in tasks]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        return pool.map(fn, tasks, chunksize=max(1, min(16, len(tasks) // (jobs * 8))))


def _ms(xs: Sequence[float], q: float) -> float:
    """The q-quantile of ``xs`` in milliseconds (q=0.5: the median)."""
    if not xs:
        return 0.0
    s = sorted(xs)
    return round(1000 * s[min(len(s) - 1, int(q * len(s)))], 3)


def vs_random(name: str, matches: int, seed: int, jobs: int) -> dict[str, Any]:
    """``name`` against three random over ``matches`` matches at rotating seats."""
    started = time.perf_counter()
    res = _map(_one_vs_random, [(name, i, seed + i) for i in range(matches)], jobs)
    wall = [t for r in res for t in r["wall"]]
    cpu = [t for r in res for t in r["cpu"]]
    wins = sum(r["rank"] == 1 for r in res)
    strict = sum(r["rank"] == 1 and not r["tied"] for r in res)
    return {
        "bot": _label(name),
        "matches": matches,
        "win_rate": round(wins / matches, 4),
        "strict_win_rate": round(strict / matches, 4),
        "mean_score": round(statistics.mean(r["score"] for r in res), 2),
        "random_mean_score": round(statistics.mean(s for r in res for s in r["others"]), 2),
        "decisions": len(wall),
        "median_ms": _ms(wall, 0.5),
        "p90_ms": _ms(wall, 0.9),
        "median_cpu_ms": _ms(cpu, 0.5),
        "p90_cpu_ms": _ms(cpu, 0.9),
        "seconds": round(time.perf_counter() - started, 1),
    }


def round_robin(matches_per_lineup: int, seed: int, jobs: int) -> dict[str, Any]:
    """Every 4-combination of the distinct built-ins, every seat rotation, M matches each."""
    bots = distinct()
    tasks = []
    k = 0
    for combo in itertools.combinations(bots, 4):
        for rot in range(4):
            lineup = combo[rot:] + combo[:rot]
            for _ in range(matches_per_lineup):
                tasks.append((lineup, seed + k))
                k += 1
    started = time.perf_counter()
    res = _map(_one_table, tasks, jobs)
    stats: dict[str, dict[str, float]] = {b: {"matches": 0, "wins": 0, "score": 0} for b in bots}
    for r in res:
        for seat, b in enumerate(r["lineup"]):
            st = stats[b]
            st["matches"] += 1
            st["wins"] += r["ranks"][seat] == 1
            st["score"] += r["scores"][seat]
    table = [
        {
            "bot": _label(b),
            "matches": int(st["matches"]),
            "win_rate": round(st["wins"] / st["matches"], 4),
            "mean_score": round(st["score"] / st["matches"], 2),
        }
        for b, st in stats.items()
    ]
    table.sort(key=lambda row: (-row["win_rate"], row["mean_score"]))
    return {
        "lineups": len(tasks) // max(1, matches_per_lineup),
        "matches": len(tasks),
        "table": table,
        "seconds": round(time.perf_counter() - started, 1),
    }


def wilson(wins: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``wins / n`` (``z``: 1.96 for 95 %)."""
    if n <= 0:
        return (0.0, 1.0)
    p = wins / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * (p * (1 - p) / n + z2 / (4 * n * n)) ** 0.5
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean_ci(xs: Sequence[float], z: float = Z95) -> tuple[float, float, float]:
    """(mean, low, high): the mean of ``xs`` with a normal-approximation interval.

    The standard error is the sample standard deviation over the square root of ``len(xs)``;
    with fewer than two values the interval is the mean itself.
    """
    n = len(xs)
    if n == 0:
        return (0.0, 0.0, 0.0)
    m = statistics.fmean(xs)
    if n < 2:
        return (m, m, m)
    half = z * statistics.stdev(xs) / n**0.5
    return (m, m - half, m + half)


def _one_field(task: tuple[str, str, int, int]) -> dict[str, Any]:
    """One match: ``candidate`` at seat ``i % 4``, three ``field`` bots; its result."""
    candidate, field, i, seed = task
    seat = i % 4
    me = Timed(make(candidate))
    agents: list[Agent] = [make(field) for _ in range(4)]
    agents[seat] = me
    log = play_match(agents, seed, agent_seeds=bench_agent_seeds(seed, len(agents)))
    scores = log["scores"]
    return {
        "rank": log["ranks"][seat],
        "tied": scores.count(scores[seat]) > 1,
        "score": scores[seat],
        "deals": [r["penalties"][seat] for r in log["rounds"]],
        "field_deals": [
            p for r in log["rounds"] for k, p in enumerate(r["penalties"]) if k != seat
        ],
        "wall": me.wall,
        "cpu": me.cpu,
    }


def field_name(name: str) -> str:
    """The built-in a ``--field`` name means (``best``: issue 19's, ``montecarlo-v1``)."""
    key = name.removeprefix("builtin:")
    return FIELD_ALIASES.get(key, key)


def field_summary(candidate: str, field: str, res: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The figures of a field run from its per-match results (see ``_one_field``)."""
    n = len(res)
    wins = sum(r["rank"] == 1 for r in res)
    strict = sum(r["rank"] == 1 and not r["tied"] for r in res)
    deals = [d for r in res for d in r["deals"]]
    heads, heads_lo, heads_hi = mean_ci(deals)
    field_heads, _, _ = mean_ci([d for r in res for d in r["field_deals"]])
    wall = [t for r in res for t in r["wall"]]
    cpu = [t for r in res for t in r["cpu"]]
    lo, hi = wilson(wins, n)
    slo, shi = wilson(strict, n)
    out: dict[str, Any] = {
        "candidate": f"builtin:{candidate}",
        "field": f"3 x builtin:{field}",
        "matches": n,
        "deals": len(deals),
        "win_rate": round(wins / n, 4) if n else 0.0,
        "win_ci95": [round(lo, 4), round(hi, 4)],
        "strict_win_rate": round(strict / n, 4) if n else 0.0,
        "strict_ci95": [round(slo, 4), round(shi, 4)],
        "heads_per_deal": round(heads, 3),
        "heads_ci95": [round(heads_lo, 3), round(heads_hi, 3)],
        "field_heads_per_deal": round(field_heads, 3),
        "decisions": len(wall),
        "median_ms": _ms(wall, 0.5),
        "p95_ms": _ms(wall, 0.95),
        "median_cpu_ms": _ms(cpu, 0.5),
        "p95_cpu_ms": _ms(cpu, 0.95),
    }
    targets = dict(FIELD_TARGETS.get(field, {}))
    targets["max_median_cpu_ms"] = FIELD_MEDIAN_MS
    ok = out["median_cpu_ms"] <= FIELD_MEDIAN_MS
    if "max_heads_per_deal" in targets:
        ok = ok and heads <= targets["max_heads_per_deal"]
    if "min_win_rate" in targets:
        ok = ok and out["win_rate"] >= targets["min_win_rate"]
    out["targets"] = targets
    out["ok"] = ok
    return out


def _one_field_line(task: tuple[str, str, int, int]) -> dict[str, Any]:
    """``_one_field`` with the task in the result (a line of ``--results``)."""
    candidate, field, i, seed = task
    return {"candidate": candidate, "field": field, "i": i, "seed": seed, **_one_field(task)}


def vs_field(
    candidate: str, field: str, matches: int, seed: int, jobs: int, results: str | None = None
) -> dict[str, Any]:
    """``candidate`` against three ``field`` bots over ``matches`` matches at rotating seats.

    ``results``: a file each match's result is appended to as a JSON line as soon as it is
    played, so a long run that is cut short still has its matches (``--summarize``).
    """
    started = time.perf_counter()
    tasks = [(candidate, field, i, seed + i) for i in range(matches)]
    res = []
    sink = open(results, "a", encoding="utf-8") if results else None  # noqa: SIM115
    try:
        if jobs <= 1:
            lines = map(_one_field_line, tasks)
            for line in lines:
                res.append(line)
                if sink:
                    sink.write(json.dumps(line) + "\n")
                    sink.flush()
        else:
            with multiprocessing.get_context("fork").Pool(jobs) as pool:
                for line in pool.imap_unordered(_one_field_line, tasks):
                    res.append(line)
                    if sink:
                        sink.write(json.dumps(line) + "\n")
                        sink.flush()
    finally:
        if sink:
            sink.close()
    res.sort(key=lambda r: r["i"])
    out = field_summary(candidate, field, res)
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def _print_field(out: dict[str, Any], jobs: int) -> None:
    n = out["matches"]
    print(
        f"{out['candidate']} vs {out['field']}, {n} matches to 66, rotating seats ({out['date']})"
    )
    print(f"  {out['machine']}")

    def pct(ci: list[float]) -> str:
        return f"[{ci[0]:.1%}, {ci[1]:.1%}]"

    t = out["targets"]
    wt = f"   target >= {t['min_win_rate']:.0%}" if "min_win_rate" in t else ""
    print(f"  match win rate (shared 1st): {out['win_rate']:.1%} {pct(out['win_ci95'])}{wt}")
    print(f"  match win rate (strict 1st): {out['strict_win_rate']:.1%} {pct(out['strict_ci95'])}")
    ht = f"   target <= {t['max_heads_per_deal']:g}" if "max_heads_per_deal" in t else ""
    lo, hi = out["heads_ci95"]
    print(
        f"  heads per deal             : {out['heads_per_deal']:.2f} [{lo:.2f}, {hi:.2f}]"
        f" ({out['deals']} deals; field {out['field_heads_per_deal']:.2f}){ht}"
    )
    print(
        f"  decision time (wall)       : median {out['median_ms']} ms, p95 {out['p95_ms']} ms"
        f" ({out['decisions']} decisions)"
    )
    print(
        f"  decision time (CPU)        : median {out['median_cpu_ms']} ms,"
        f" p95 {out['p95_cpu_ms']} ms   target median <= {FIELD_MEDIAN_MS:g} ms"
    )
    print(f"  {'OK' if out['ok'] else 'BELOW TARGET'} ({out['seconds']} s, {jobs} jobs)")


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matches", type=int, default=1000, help="matches per built-in vs random")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (one core each)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the first match")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--table", action="store_true", help="the table of all built-ins")
    ap.add_argument(
        "--field",
        metavar="NAME",
        help="candidate vs 3 copies of this built-in (best: issue 19's, i.e. montecarlo-v1)",
    )
    ap.add_argument("--candidate", default="best", help="the candidate built-in (--field)")
    ap.add_argument("--results", metavar="FILE", help="append each match's result (--field)")
    ap.add_argument(
        "--summarize",
        nargs="+",
        metavar="FILE",
        help="the --field figures of the matches in these --results files",
    )
    ap.add_argument(
        "--rr-matches", type=int, default=50, help="round-robin matches per lineup (--table)"
    )
    args = ap.parse_args()
    header = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": _machine(),
        "command": "python " + " ".join(sys.argv),
    }
    if args.summarize:
        lines = []
        for path in args.summarize:
            with open(path, encoding="utf-8") as f:
                lines += [json.loads(x) for x in f if x.strip()]
        pairs = {(r["candidate"], r["field"]) for r in lines}
        if len(pairs) != 1:
            ap.error(f"the files hold {len(pairs)} candidate/field pairs; summarize one at a time")
        cand, field = pairs.pop()
        res = field_summary(cand, field, lines)
        out = {**header, **res, "seeds": sorted({r["seed"] for r in lines}), "seconds": 0.0}
        if args.json:
            print(json.dumps(out))
        else:
            _print_field(out, args.jobs)
        return 0 if res["ok"] else 1
    if args.field:
        field = field_name(args.field)
        for name in (field, args.candidate):
            if name.removeprefix("builtin:") not in BUILTINS:
                ap.error(f"unknown built-in {name!r}; the built-ins are: {', '.join(BUILTINS)}")
        cand = args.candidate.removeprefix("builtin:")
        res = vs_field(cand, field, args.matches, args.seed, args.jobs, args.results)
        out = {**header, **res}
        if args.json:
            print(json.dumps(out))
        else:
            _print_field(out, args.jobs)
        return 0 if res["ok"] else 1
    if args.table:
        # An alias plays exactly like its target (same code, same seeds): measured once.
        rows = [vs_random(n, args.matches, args.seed, args.jobs) for n in distinct()]
        rr = round_robin(args.rr_matches, args.seed, args.jobs)
        out: dict[str, Any] = {**header, "vs_random": rows, "round_robin": rr}
        if args.json:
            print(json.dumps(out, indent=1))
        else:
            _print_table(out)
        return 0
    res = vs_random("best", args.matches, args.seed, args.jobs)
    ok = res["win_rate"] >= TARGET_WIN and res["median_ms"] <= TARGET_MEDIAN_MS
    out = {**header, **res, "targets": {"win_rate": TARGET_WIN, "median_ms": TARGET_MEDIAN_MS}}
    out["ok"] = ok
    if args.json:
        print(json.dumps(out))
    else:
        n = res["matches"]
        print(f"builtin:best vs 3 builtin:random, {n} matches, rotating seats ({header['date']})")
        print(f"  win rate (shared 1st) : {res['win_rate']:.1%}   target >= {TARGET_WIN:.0%}")
        print(f"  win rate (strict 1st) : {res['strict_win_rate']:.1%}")
        print(f"  mean score            : {res['mean_score']} (random: {res['random_mean_score']})")
        print(
            f"  decision time (wall)  : median {res['median_ms']} ms, p90 {res['p90_ms']} ms"
            f"   target median <= {TARGET_MEDIAN_MS:g} ms ({res['decisions']} decisions)"
        )
        cpu = f"median {res['median_cpu_ms']} ms, p90 {res['p90_cpu_ms']} ms"
        print(f"  decision time (CPU)   : {cpu}")
        print(f"  {'OK' if ok else 'BELOW TARGET'} ({res['seconds']} s, {args.jobs} jobs)")
    return 0 if ok else 1


def _print_table(out: dict[str, Any]) -> None:
    print(f"{out['date']}  {out['machine']}")
    print(f"$ {out['command']}")
    print("\nEach built-in vs 3 builtin:random (rotating seats)")
    print("| bot | matches | win rate | strict | mean score | random's mean | median ms | p90 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in out["vs_random"]:
        print(
            f"| `{r['bot']}` | {r['matches']} | {r['win_rate']:.1%} | {r['strict_win_rate']:.1%} "
            f"| {r['mean_score']} | {r['random_mean_score']} | {r['median_ms']} | {r['p90_ms']} |"
        )
    rr = out["round_robin"]
    print(
        f"\nRound-robin: {rr['lineups']} seatings (every 4 of the distinct built-ins, each in"
        f" 4 seat rotations), {rr['matches']} matches"
    )
    print("| bot | seats played | win rate | mean score |")
    print("|---|---:|---:|---:|")
    for r in rr["table"]:
        print(f"| `{r['bot']}` | {r['matches']} | {r['win_rate']:.1%} | {r['mean_score']} |")


if __name__ == "__main__":
    sys.exit(main())
