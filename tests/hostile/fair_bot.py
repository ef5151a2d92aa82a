"""A fair bot that thinks: it spends 30 ms of CPU time (not wall time) on every move, so a
CPU hog beside it shows as longer decisions."""

import time

from cow006 import Agent

CPU_SECONDS = 0.030


class Bot(Agent):
    def play(self, view):
        end = time.thread_time() + CPU_SECONDS
        while time.thread_time() < end:
            pass
        return max(view.hand)
