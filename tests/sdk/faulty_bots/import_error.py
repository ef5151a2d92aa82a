"""Fails on import with a NameError at line 3."""

x = undefined_name + 1  # noqa: F821


def play(view):
    return min(view.hand)
