"""Built-in bots benchmark: how often ``builtin:best`` wins against three ``builtin:random``.

Default mode: ``--matches`` four-player matches, ``best`` at seat ``i % 4`` in match ``i`` (seed
``--seed + i``), the other seats ``random``.  A match is won when ``best`` ends with rank 1
("shared": a tie for first counts; "strict": alone in first).  Every ``play``/``take_row`` call
of ``best`` is timed with ``time.perf_counter`` (wall clock, what a time limit sees) and with
``time.process_time`` (CPU time of its process, which other load on a shared machine barely
moves).  Each job is one single-threaded process, i.e. one core.
Targets: win rate (shared) >= 82 % and median decision time <= 25 ms.

``--table``: the win-rate table of all built-ins published in docs/builtins.md: each built-in
against three ``random``, then a mixed round-robin of the distinct built-ins at four-player
tables (every combination of four, every rotation of the seats).

    python bench/bots.py [--matches N] [--jobs J] [--seed S] [--json]
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
ALIASES = {"best": "montecarlo"}


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
        "--rr-matches", type=int, default=50, help="round-robin matches per lineup (--table)"
    )
    args = ap.parse_args()
    header = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": _machine(),
        "command": "python " + " ".join(sys.argv),
    }
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
