"""Attack: rebuilds every hand of the match from its own seed and a guessed match seed.

The runner used to derive each bot's seed from the match seed by a published formula
(``random.Random(f"cow006-agents/{seed}")``), so a bot could search the small match seeds
people pick (``--seed 3``, a challenge's chosen seed) for the one whose formula gives its own
seed, then deal the match itself with the engine's ``deal()``.  It also tries its seed as the
match seed and as the formula's input.  It says ``SEED``, ``NAMES`` and what it found on
stderr, and ``ESCAPED`` when a rebuilt deal matches its hand.
"""

import random
import sys

from cow006 import Agent, engine

GUESSES = range(0, 2000)  # the match seeds a person types


def formula(seed, n):
    rng = random.Random(f"cow006-agents/{seed}")
    return [rng.getrandbits(63) for _ in range(n)]


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK seed_spy", file=sys.stderr, flush=True)
        print(f"SEED {info.seed}", file=sys.stderr, flush=True)
        print(f"NAMES {','.join(info.names)}", file=sys.stderr, flush=True)
        self.seat = info.seat
        self.candidates = [s for s in GUESSES if formula(s, info.n_players)[info.seat] == info.seed]
        self.candidates += [info.seed, formula(info.seed, info.n_players)[info.seat]]
        self.n = info.n_players
        self.checked = False

    def on_round_start(self, view):
        if self.checked:
            return
        self.checked = True
        for guess in self.candidates:
            hands, _rows = engine.deal(random.Random(guess), self.n)
            if sorted(hands[self.seat]) == sorted(view.hand):
                others = [h for s, h in enumerate(hands) if s != self.seat]
                print(f"ESCAPED: rebuilt every hand from my seed: {others}", file=sys.stderr)
                return
        print("seed_spy: no hand rebuilt from my seed", file=sys.stderr, flush=True)

    def play(self, view):
        return min(view.hand)
