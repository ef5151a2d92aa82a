"""Attack: a segmentation fault through ctypes in the middle of the match (crash)."""

import ctypes
import sys

from cow006 import Agent


class Bot(Agent):
    def play(self, view):
        if (view.round, view.turn) == (0, 2):  # its move #3
            print("ATTACK segfault", file=sys.stderr, flush=True)
            ctypes.string_at(0)
        return min(view.hand)
