"""Attack: os._exit in the middle of the match (crash)."""

import os
import sys

from cow006 import Agent


class Bot(Agent):
    turns = 0

    def play(self, view):
        self.turns += 1
        if self.turns == 5:
            print("ATTACK exit_mid", file=sys.stderr, flush=True)
            os._exit(3)
        return min(view.hand)
