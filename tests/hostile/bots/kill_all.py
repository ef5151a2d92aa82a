"""Attack: kill -1, then kills its parent and pid 1.  Only ever fired inside the sandbox."""

import os
import signal
import sys

from cow006 import Agent, bot


class Bot(Agent):
    def on_match_start(self, info):
        if not bot.sandboxed():
            print("kill_all: not sandboxed, not firing", file=sys.stderr, flush=True)
            return
        print("ATTACK kill_all", file=sys.stderr, flush=True)
        for target in (-1, os.getppid(), 1):
            try:
                os.kill(target, signal.SIGKILL)
                print(f"kill_all: kill({target}) returned", file=sys.stderr, flush=True)
            except OSError as exc:
                print(f"kill_all: kill({target}): {exc}", file=sys.stderr, flush=True)

    def play(self, view):
        return min(view.hand)
