"""Plays well but writes 200 kB to stderr per decision: the host keeps a bounded part."""

import sys


def play(view):
    sys.stderr.write("x" * 200_000 + "\n")
    print("print() goes to stderr too")
    return min(view.hand)
