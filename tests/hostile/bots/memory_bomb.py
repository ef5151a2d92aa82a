"""Attack: allocates (and touches) memory until it fails (RLIMIT_AS)."""

import sys

from cow006 import Agent, bot

CHUNK = 32 << 20


class Bot(Agent):
    def play(self, view):
        if (view.round, view.turn) == (0, 0) and bot.sandboxed():  # the first move
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
