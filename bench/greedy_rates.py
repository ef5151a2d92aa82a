"""How greedily each built-in plays: the share of its turns whose card was the greedy one.

``builtin:best`` models an opponent as greedy as often as that opponent is seen to play the
greedy card of its hand (it counts them in the round logs, ``BestBot.greedy_counts``); this
prints the rate of each built-in named, over matches of four copies of it (every seat counted),
as a ``BestBot`` watching those logs counts it.

    python bench/greedy_rates.py greedy safe montecarlo-v1 random [--matches N] [--seed S]
"""

from __future__ import annotations

import argparse
import sys

from cow006 import MatchInfo, play_match
from cow006.bots import BestBot, make


def rate(name: str, matches: int, seed: int) -> float:
    """The share of counted turns (two or more cards in hand) on which ``name`` played greedy."""
    agree = turns = 0
    for i in range(matches):
        log = play_match([make(name) for _ in range(4)], seed + i)
        watcher = BestBot()
        watcher.on_match_start(MatchInfo(seat=0, n_players=4, seed=0))
        for entry in log["rounds"]:
            watcher.on_round_end(entry)
        agree += sum(a for a, _ in watcher.greedy_counts())
        turns += sum(t for _, t in watcher.greedy_counts())
    return agree / max(1, turns)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bots", nargs="+", help="built-in names")
    ap.add_argument("--matches", type=int, default=2, help="matches per bot")
    ap.add_argument("--seed", type=int, default=1, help="seed of the first match")
    args = ap.parse_args()
    for name in args.bots:
        print(f"{name}: {rate(name, args.matches, args.seed):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
