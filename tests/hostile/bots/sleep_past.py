"""Attack: sleeps far past the decision deadline (timeout)."""

import sys
import time

from cow006 import Agent


class Bot(Agent):
    def play(self, view):
        print("ATTACK sleep_past", file=sys.stderr, flush=True)
        time.sleep(60)
        return min(view.hand)
