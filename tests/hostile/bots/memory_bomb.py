"""Attack: allocates (and touches) memory until it fails (RLIMIT_AS)."""

import os
import sys

from cow006 import Agent

CHUNK = 32 << 20


def sandboxed():
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
            print("ATTACK memory_bomb", file=sys.stderr, flush=True)
            hoard = []
            try:
                for _ in range(256):  # 8 GiB at most
                    hoard.append(b"\x01" * CHUNK)
            except MemoryError:
                pass
            got = len(hoard) * CHUNK >> 20
            hoard.clear()
            print(f"memory_bomb: {got} MiB", file=sys.stderr, flush=True)
            if got > 600:
                print(f"ESCAPED: allocated {got} MiB", file=sys.stderr, flush=True)
        return min(view.hand)
