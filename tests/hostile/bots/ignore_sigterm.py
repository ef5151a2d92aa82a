"""Attack: ignores SIGTERM and SIGINT, and refuses to exit after match_end (killed)."""

import signal
import sys
import time

from cow006 import Agent

signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
print("ATTACK ignore_sigterm", file=sys.stderr, flush=True)


class Bot(Agent):
    def play(self, view):
        return min(view.hand)

    def on_match_end(self, result):
        while True:
            time.sleep(1)
