"""Exits abruptly in the middle of the first round: a crash."""

import os


def play(view):
    if view.turn == 3:
        os._exit(3)
    return max(view.hand)
