"""The logs of many seeded matches, one JSON line each, to compare two versions of the runner.

A change made for speed (bench/engine.py) must leave every log byte-identical.  This plays
``N`` matches with fixed match and agent seeds, over a mix of agents that reach every part of
the runner: random players, players with their own ``take_row`` that read the whole view,
players that keep their views and read old ones later, faulty players (bad types, cards not in
the hand, exceptions, bad rows), players with round hooks (one of which changes the round's
entry it is handed), 2 to 5 seats; then ``N // 50`` matches between the built-in bots.

    python bench/engine_logs.py N OUT     (then ``cmp`` the OUT of the two versions)

It prints the file's sha256.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Callable
from typing import Any

from cow006 import Agent, MatchInfo, View, play_match
from cow006.bots import make


class Random(Agent):
    def on_match_start(self, info: MatchInfo) -> None:
        self.rng = random.Random(info.seed)

    def play(self, view: View) -> int:
        return self.rng.choice(view.hand)


class Reader(Random):
    """Reads every field of its views and chooses its own rows."""

    def play(self, view: View) -> int:
        _ = (view.rows, view.revealed, view.scores, view.penalties, view.turn)
        return self.rng.choice(view.hand)

    def take_row(self, view: View) -> int:
        return max(range(4), key=lambda i: (len(view.rows[i]), view.row_heads(i)))


class Keeper(Random):
    """Keeps its last views and reads the oldest one again before letting it go."""

    def on_match_start(self, info: MatchInfo) -> None:
        super().on_match_start(info)
        self.kept: list[View] = []

    def play(self, view: View) -> int:
        self.kept.append(view)
        if len(self.kept) > 3:
            old = self.kept.pop(0)
            _ = (old.turn, old.rows, old.revealed)
        return self.rng.choice(view.hand)


class Faulty(Random):
    """Now and then a bad card, an exception, a bad row."""

    def play(self, view: View) -> Any:
        x = self.rng.random()
        if x < 0.05:
            return "12"
        if x < 0.1:
            return 200
        if x < 0.13:
            raise RuntimeError("boom")
        if x < 0.15:
            return True
        return self.rng.choice(view.hand)

    def take_row(self, view: View) -> Any:
        x = self.rng.random()
        if x < 0.2:
            return 7
        if x < 0.3:
            return 1.0
        return self.rng.randrange(4)


class Hooked(Random):
    """Round hooks; the end-of-round one changes the entry it is handed (and so the log)."""

    def on_round_start(self, view: View) -> None:
        self.start_rows = view.rows

    def on_round_end(self, result: dict[str, Any]) -> None:
        result["turns"][0]["rows"][0].append(999)

    def play(self, view: View) -> int:
        _ = view.rows
        return self.rng.choice(view.hand)


TABLES: list[Callable[[], list[Agent]]] = [
    lambda: [Random(), Random(), Random(), Random()],
    lambda: [Reader(), Random(), Keeper(), Random()],
    lambda: [Faulty(), Random(), Reader(), Faulty()],
    lambda: [Hooked(), Random(), Random(), Reader(), Keeper()],
    lambda: [Random(), Random()],
]


def main() -> int:
    n, out = int(sys.argv[1]), sys.argv[2]
    with open(out, "w", encoding="utf-8") as f:
        for seed in range(n):
            agents = TABLES[seed % len(TABLES)]()
            seeds = [seed * 10 + i for i in range(len(agents))]
            log = play_match(agents, seed, agent_seeds=seeds)
            f.write(json.dumps(log, separators=(",", ":")) + "\n")
        for seed in range(n // 50):
            bots = [make(b) for b in ("greedy", "safe", "lowest", "random")]
            log = play_match(bots, seed, agent_seeds=[seed, 1, 2, 3])
            f.write(json.dumps(log, separators=(",", ":")) + "\n")
    with open(out, "rb") as f:
        print(hashlib.sha256(f.read()).hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main())
