"""Attack: plays its lowest card, so it has to take rows, and names row 7 (illegal_row)."""

import sys

from cow006 import Agent

print("ATTACK row_seven", file=sys.stderr, flush=True)


class Bot(Agent):
    def play(self, view):
        return min(view.hand)

    def take_row(self, view):
        return 7
