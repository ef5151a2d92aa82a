"""Attack: a double-forked daemon meant to outlive the bot (it keeps its pipes, too)."""

import os
import sys
import time

from cow006 import Agent


def sandboxed():
    try:
        with open("/proc/1/cmdline", "rb") as f:
            init = f.read()
    except OSError:
        return False
    return os.getuid() != 0 and os.getpid() < 50 and b"bwrap" in init


class Bot(Agent):
    def on_match_start(self, info):
        if not sandboxed():
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
