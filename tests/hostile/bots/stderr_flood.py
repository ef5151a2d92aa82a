"""Attack: 400 MB of stderr (the host keeps a bounded buffer and drops the rest)."""

import os
import sys

from cow006 import Agent


class Bot(Agent):
    def play(self, view):
        if (view.round, view.turn) == (0, 0):  # the first move
            print("ATTACK stderr_flood", file=sys.stderr, flush=True)
            block = b"e" * (1 << 20)
            for _ in range(400):
                os.write(2, block)
        return min(view.hand)
