"""Two versions of ``play_match`` and the reference loop of bench/engine.py, in one process.

On a shared machine a run's figures move with the load by more than a change of a few per cent,
and two runs one after the other do not see the same load.  Here the SDK of this checkout
(``cow006``) and an older one (a copy of its ``sdk/cow006`` imported as ``cow006_old``; the
package imports itself by relative imports only) play in rotating batches of 25 matches with
the reference loop, on one core, so all three see the same moments of the machine.

    git worktree add /tmp/old main          # or any checkout of the older version
    python bench/engine_oldnew.py /tmp/old [--runs R] [--seconds S]

Prints each run's matches a second and the medians of new/reference, old/reference and new/old.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import engine as bench  # bench/engine.py, next to this script

from cow006 import Agent, MatchInfo, View


def random_agent(base: type[Any]) -> type[Any]:
    """bench/engine.py's random agent, derived from ``base`` (either version's ``Agent``)."""

    class RandomAgent(base):  # type: ignore[misc, valid-type]
        def on_match_start(self, info: MatchInfo) -> None:
            self.rng = random.Random(info.seed)

        def play(self, view: View) -> int:
            return self.rng.choice(view.hand)

    return RandomAgent


def rates(
    loops: dict[str, Callable[[int], Any]], seconds: float, batch: int = 25
) -> dict[str, float]:
    """Matches a second of each loop, played in batches that take turns going first."""
    names = list(loops)
    spent = dict.fromkeys(names, 0.0)
    played = dict.fromkeys(names, 0)
    clock = time.perf_counter
    end = clock() + seconds
    seed = k = 0
    while clock() < end:
        k += 1
        for name in names[k % len(names) :] + names[: k % len(names)]:
            fn = loops[name]
            start = clock()
            for i in range(seed, seed + batch):
                fn(i)
            spent[name] += clock() - start
            played[name] += batch
        seed += batch
    return {name: played[name] / spent[name] for name in names}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, help="a checkout of the older version (its sdk/cow006)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--seconds", type=float, default=3.0, help="time per run")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(args.old / "sdk" / "cow006", Path(tmp) / "cow006_old")
        sys.path.insert(0, tmp)
        import cow006_old  # type: ignore[import-not-found]

        new_agent, old_agent = random_agent(Agent), random_agent(cow006_old.Agent)
        loops: dict[str, Callable[[int], Any]] = {
            "new": lambda seed: bench.play_match([new_agent() for _ in range(4)], seed),
            "old": lambda seed: cow006_old.play_match([old_agent() for _ in range(4)], seed),
            "ref": bench.reference_match,
        }
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
        runs = [rates(loops, args.seconds) for _ in range(args.runs)]
    for r in runs:
        print(
            f"new {r['new']:6.0f}/s  old {r['old']:6.0f}/s  ref {r['ref']:6.0f}/s  "
            f"new/ref {r['new'] / r['ref']:.3f}  old/ref {r['old'] / r['ref']:.3f}  "
            f"new/old {r['new'] / r['old']:.3f}"
        )

    def median(key: Callable[[dict[str, float]], float]) -> float:
        return statistics.median(map(key, runs))

    print(
        f"median new/ref {median(lambda r: r['new'] / r['ref']):.3f}  "
        f"old/ref {median(lambda r: r['old'] / r['ref']):.3f}  "
        f"new/old {median(lambda r: r['new'] / r['old']):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
