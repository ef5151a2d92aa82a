"""Takes far too long to import: a startup fault."""

import time

time.sleep(30)


def play(view):
    return min(view.hand)
