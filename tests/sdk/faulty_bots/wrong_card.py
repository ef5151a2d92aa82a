"""Plays a card that is not in its hand."""


def play(view):
    return next(c for c in range(104, 0, -1) if c not in view.hand)
