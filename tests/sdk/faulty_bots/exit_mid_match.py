"""Exits abruptly in the middle of the first round: a crash.  Its last stderr line is private."""

import os
import sys


def play(view):
    if view.turn == 3:
        print("owner-only secret: 4f1c", file=sys.stderr, flush=True)
        os._exit(3)
    return max(view.hand)
