"""Sleeps past the decision deadline every time: the bank drains, then timeouts; the late
replies must be dropped as stale, not faulted again."""

import time


def play(view):
    time.sleep(0.25)
    return max(view.hand)
