"""Golden logs: seeded matches must keep producing byte-identical ``cow006-match-1`` logs.

The runner, the engine and the views are tuned for speed (bench/engine.py); this pins what
they produce.  Each match has a seed, fixed agent seeds and a mix of built-ins and test agents:
``Snoop`` keeps every view it is given, re-reads the old ones at each decision (so a view must
still hold what it held when it was made, whatever happened since), tries to change them, and
lets what it saw pick its card; ``Faulty`` makes every kind of in-process fault; ``Hooks``
overrides the notification hooks.  The digest covers each log as JSON (key order included) and
everything the snoops saw.  Every log must also pass ``cow006.log.verify``.

The pinned digest was taken before the speed work; if a change of behaviour is intended, print
the new one with ``python tests/sdk/test_golden_logs.py`` and say why in the commit.
``python tests/sdk/test_golden_logs.py --full`` plays 300 matches with ``montecarlo`` seats too.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from typing import Any

from cow006 import Agent, MatchInfo, View, play_match, verify
from cow006.bots import make

# sha256 over golden matches (``digest``), taken at 1f122fd: (matches, full) -> digest.
PINNED = {
    (120, False): "66dfbf37f48e0ccaf74a2db5aa426c2a309007f89e0be050f66fd60bd37e5b44",
    (300, True): "ec6a28c53b11dd40cebe37fca93ce75222f426a382813f64d5013994b62818d8",
}
N_MATCHES = 120


def _view_facts(view: View) -> list[Any]:
    """Everything an agent can read from a view through its documented surface."""
    facts: list[Any] = [
        view.to_dict(),
        repr(view),
        sorted(view.seen()),
        view.unseen(),
        view.row_heads(),
        [view.row_heads(i) for i in range(4)],
        list(view.row_ends),
        view.my_score,
        view.cheapest_row(),
        view.card,
        view.current,
        [view.target_row(c) for c in (1, 30, 60, 104)],
    ]
    for c in view.hand[:2]:
        facts.append(view.simulate(c))
        facts.append(view.simulate(c, 2))
    facts.append(View.from_dict(view.to_dict()).to_dict())
    return facts


class Snoop(Agent):
    """Keeps its views, re-reads them later, tries to change them; plays what they hash to."""

    def __init__(self) -> None:
        self.kept: list[View] = []
        self.hash = hashlib.sha256()

    def _see(self, view: View) -> int:
        self.kept.append(view)
        # Re-read a few old views (all of them would be slow): they must not have changed.
        for old in self.kept[-2:] + self.kept[:: max(1, len(self.kept) // 2)]:
            self.hash.update(json.dumps(_view_facts(old), default=list).encode())
        # Try to change what it holds: only its own attributes may change, nothing else.
        for attr, value in (("rows", ((1,),)), ("scores", (0,)), ("hand", (0,))):
            try:
                setattr(self.kept[0], attr, value)
                self.hash.update(f"set {attr}".encode())
            except AttributeError:
                self.hash.update(f"refused {attr}".encode())
        for mutate in (lambda: view.hand.append(0), lambda: view.rows[0].append(0)):  # type: ignore[attr-defined]
            try:
                mutate()
                self.hash.update(b"mutated")
            except AttributeError:
                self.hash.update(b"immutable")
        view.time_left = 1.0  # an agent may scribble on its own view
        return int.from_bytes(self.hash.digest()[:4], "big")

    def on_round_start(self, view: View) -> None:
        self._see(view)

    def play(self, view: View) -> int:
        hand = view.hand
        return hand[self._see(view) % len(hand)]

    def take_row(self, view: View) -> int:
        return self._see(view) % 4


class Faulty(Agent):
    """Every in-process fault: exceptions, wrong types, cards not held, rows out of range."""

    def on_match_start(self, info: MatchInfo) -> None:
        self.rng = random.Random(info.seed)

    def play(self, view: View) -> Any:
        r = self.rng.random()
        if r < 0.05:
            raise RuntimeError(f"boom at turn {view.turn}")
        if r < 0.08:
            return self.rng.choice([True, "12", 3.0, None, [1]])
        if r < 0.11:
            return self.rng.choice([c for c in range(1, 105) if c not in view.hand])
        if r < 0.12:
            raise SystemExit(3)
        return self.rng.choice(view.hand)

    def take_row(self, view: View) -> Any:
        r = self.rng.random()
        if r < 0.1:
            raise ValueError("no row")
        if r < 0.2:
            return self.rng.choice([7, -1, "1", 1.0, True])
        return self.rng.randrange(4)


class Hooks(Agent):
    """Overrides every hook and records what it is told (into its own choices)."""

    def on_match_start(self, info: MatchInfo) -> None:
        self.rng = random.Random(info.seed)
        self.notes: list[Any] = [info.seat, info.n_players, info.names, info.settings]

    def on_round_start(self, view: View) -> None:
        self.notes.append(view.to_dict())

    def on_round_end(self, result: dict[str, Any]) -> None:
        self.notes.append(json.dumps(result))

    def on_match_end(self, result: dict[str, Any]) -> None:
        self.notes.append(result)

    def play(self, view: View) -> int:
        return view.hand[len(json.dumps(self.notes)) % len(view.hand)]

    def take_row(self, view: View) -> int:
        return max(range(4), key=view.row_heads)


CHEAP = ("random", "greedy", "safe", "lowest", "snoop", "faulty", "hooks")


def _agent(name: str) -> Agent:
    return {"snoop": Snoop, "faulty": Faulty, "hooks": Hooks}.get(name, lambda: make(name))()


def golden_match(i: int, full: bool = False) -> tuple[dict[str, Any], list[Agent]]:
    """Match ``i`` of the golden set: its log and its agents."""
    rng = random.Random(f"golden {i}")
    n = 4 if i % 3 else rng.randint(2, 10)
    names = [rng.choice(CHEAP) for _ in range(n)]
    if full and i % 25 == 0:
        names[rng.randrange(n)] = "montecarlo"
    agents = [_agent(name) for name in names]
    options: dict[str, Any] = {"agent_seeds": [rng.getrandbits(63) for _ in range(n)]}
    if i % 7 == 0:
        options["settings"] = {"ladder": "golden", "i": i}
    if i % 11 == 0:
        options["names"] = [f"who{s}" for s in range(n)]
    log = play_match(agents, rng.getrandbits(63), **options)
    return dict(log), agents


def digest(n_matches: int, full: bool = False) -> str:
    """sha256 over the JSON of ``n_matches`` golden logs and what their snoops saw."""
    total = hashlib.sha256()
    for i in range(n_matches):
        log, agents = golden_match(i, full)
        verify(log)
        total.update(json.dumps(log).encode())
        for a in agents:
            if isinstance(a, Snoop):
                total.update(a.hash.digest())
    return total.hexdigest()


def test_golden_logs_are_unchanged() -> None:
    assert digest(N_MATCHES) == PINNED[N_MATCHES, False]


if __name__ == "__main__":
    full = "--full" in sys.argv
    n = 300 if full else N_MATCHES
    got = digest(n, full)
    print(n, "full" if full else "cheap", got, "pinned" if got == PINNED[n, full] else "CHANGED")
    sys.exit(0 if got == PINNED[n, full] else 1)
