"""Attack: an import that runs past the startup deadline (startup)."""

import sys
import time

print("ATTACK slow_import", file=sys.stderr, flush=True)
time.sleep(60)


def play(view):
    return min(view.hand)
