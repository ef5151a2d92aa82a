"""Plays `true`: a bool is an int in Python, but not a card."""


def play(view):
    return True
