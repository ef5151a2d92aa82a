"""Measure a trained bot folder against three ``builtin:greedy``: win rate with its 95 % CI.

    python examples/rl/evaluate.py examples/rl --matches 400

Full matches, seat-rotated (match m puts the bot at seat m % 4), on seeds apart from the
ones train.py trains and draws its curve on.  The bot plays in-process here (the same
``Bot`` class ``cow006 match`` runs in a process); the figures are: the win rate (a shared
first place counts, as for every seat, so four equal bots would each get at least 25 %), the
strict win rate (sole first), and the heads per deal of the bot and of the greedy seats.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bot import Bot, Policy  # noqa: E402

from cow006 import Agent, play_match  # noqa: E402
from cow006.bots import make  # noqa: E402

SEED = 20_000_000  # apart from train.py's training seeds and its curve's (10_000_000 + m)


def wilson(wins: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95 % for z = 1.96)."""
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "folder", nargs="?", default=HERE, help="a folder with weights.npz, or builtin:NAME"
    )
    ap.add_argument("--matches", type=int, default=400)
    ap.add_argument("--opponent", default="greedy", help="the built-in at the other 3 seats")
    args = ap.parse_args(argv)
    if args.folder.startswith("builtin:"):  # the same matches with a built-in, to compare
        name = args.folder.removeprefix("builtin:")

        def player() -> Agent:
            return make(name)
    else:
        policy = Policy.load(os.path.join(args.folder, "weights.npz"))

        def player() -> Agent:
            return Bot(policy)

    wins = strict = deals = 0
    bot_heads = other_heads = 0.0
    for m in range(args.matches):
        seat = m % 4
        agents = [make(args.opponent) for _ in range(3)]
        agents.insert(seat, player())
        log = play_match(agents, seed=SEED + m, agent_seeds=[SEED + m] * 4)
        scores = log["scores"]
        best = min(scores)
        wins += scores[seat] == best
        strict += scores[seat] == best and scores.count(best) == 1
        deals += len(log["rounds"])
        bot_heads += scores[seat]
        other_heads += (sum(scores) - scores[seat]) / 3
    n = args.matches
    lo, hi = wilson(wins, n)
    slo, shi = wilson(strict, n)
    print(f"{n} matches, {args.folder} against 3 builtin:{args.opponent}, seats rotated")
    print(f"win rate     {wins / n:6.1%}  (95 % CI {lo:.1%} .. {hi:.1%}; parity 25 %)")
    print(f"strict wins  {strict / n:6.1%}  (95 % CI {slo:.1%} .. {shi:.1%})")
    print(f"heads/deal   bot {bot_heads / deals:.2f}, {args.opponent} {other_heads / deals:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
