"""Attack: a segmentation fault through ctypes in the middle of the match (crash)."""

import ctypes
import sys

from cow006 import Agent


class Bot(Agent):
    turns = 0

    def play(self, view):
        self.turns += 1
        if self.turns == 3:
            print("ATTACK segfault", file=sys.stderr, flush=True)
            ctypes.string_at(0)
        return min(view.hand)
