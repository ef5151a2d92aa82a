"""Attack: behaves in validation and faults in the arena.

Validation tables were seated with built-ins, and ``hello`` named them: a bot that sees a
``builtin`` among the names, or an opponent it knows from validation, plays well; anywhere
else it plays a card it does not hold (``illegal_card``).  Where it cannot tell, it faults:
validation then rejects it, as it should.
"""

import sys

from cow006 import Agent


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK dodger", file=sys.stderr, flush=True)
        others = [n for s, n in enumerate(info.names) if s != info.seat]
        tells = ("builtin", "random", "greedy", "safe", "montecarlo", "best", "lowest")
        self.validating = any(t in n.lower() for n in others for t in tells)
        print(f"dodger: names {others}, validating={self.validating}", file=sys.stderr)

    def play(self, view):
        if self.validating:
            return max(view.hand)
        return 105  # never in a hand: a fault in the arena
