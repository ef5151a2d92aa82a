"""The tie rate behind ``cow006_platform.ratings.DEFAULT_DRAW_PROBABILITY`` (docs/ratings.md).

4-player matches of built-in bots, each seat drawn at random from ``--bots``, with match
seeds from a seeded generator; for every match each of the 6 pairs of seats counts as a tie
if their totals are equal.  The probability is ties / pairs.  A measurement, not a part of
the arena: it plays matches in-process, which the platform never does.

    python bench/draws.py [--matches 5000] [--seed 1] [--bots random,greedy,safe]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
from collections.abc import Sequence

from cow006 import bots as builtins
from cow006 import play_match


def measure_draw_probability(
    matches: int = 5000, seed: int = 1, bots: Sequence[str] = ("random", "greedy", "safe")
) -> dict[str, float]:
    """Returns {"matches", "pairs", "ties", "probability"}."""
    rng = random.Random(seed)
    pairs = ties = 0
    for _ in range(matches):
        names = [rng.choice(list(bots)) for _ in range(4)]
        game = rng.getrandbits(63)
        # The agents' seeds fixed by the game's: a measurement of built-ins is repeatable,
        # where a real match draws them secretly.
        own = random.Random(f"cow006-agents/{game}")
        log = play_match(
            [builtins.make(n) for n in names],
            seed=game,
            agent_seeds=[own.getrandbits(63) for _ in names],
        )
        for a, b in itertools.combinations(log["scores"], 2):
            pairs += 1
            ties += a == b
    return {
        "matches": matches,
        "pairs": pairs,
        "ties": ties,
        "probability": ties / pairs if pairs else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bots", default="random,greedy,safe")
    args = parser.parse_args()
    print(json.dumps(measure_draw_probability(args.matches, args.seed, args.bots.split(","))))


if __name__ == "__main__":
    main()
