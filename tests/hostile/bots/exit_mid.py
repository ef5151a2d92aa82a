"""Attack: os._exit in the middle of the match (crash)."""

import os
import sys


def play(view):
    if (view.round, view.turn) == (0, 4):  # its move #5
        print("ATTACK exit_mid", file=sys.stderr, flush=True)
        os._exit(3)
    return min(view.hand)
