"""Attack: an infinite loop when asked to play (timeout)."""

import sys

from cow006 import Agent


class Bot(Agent):
    def play(self, view):
        print("ATTACK loop_forever", file=sys.stderr, flush=True)
        while True:
            pass
