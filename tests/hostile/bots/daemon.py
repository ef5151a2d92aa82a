"""Attack: a double-forked daemon meant to outlive the bot (it keeps its pipes, too)."""

import os
import sys
import time

from cow006 import Agent, bot


class Bot(Agent):
    def on_match_start(self, info):
        if not bot.sandboxed():
            return
        print("ATTACK daemon", file=sys.stderr, flush=True)
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                while True:  # lingers, holding stderr open
                    time.sleep(0.2)
            os._exit(0)
        os.wait()

    def play(self, view):
        return min(view.hand)
