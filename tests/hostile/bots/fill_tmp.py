"""Attack: fills /tmp, and tries every other place it might write to."""

import os
import sys

from cow006 import Agent, bot

CHUNK = b"t" * (1 << 20)


def fill(path, limit_mib):
    wrote = 0
    try:
        with open(path, "wb") as f:
            for _ in range(limit_mib):
                f.write(CHUNK)
                f.flush()
                wrote += 1
    except OSError:
        pass
    return wrote


class Bot(Agent):
    def play(self, view):
        if (view.round, view.turn) == (0, 0) and bot.sandboxed():  # the first move
            print("ATTACK fill_tmp", file=sys.stderr, flush=True)
            total = sum(fill(f"/tmp/fill{i}", 7) for i in range(8))  # below RLIMIT_FSIZE each
            print(f"fill_tmp: {total} MiB in /tmp", file=sys.stderr, flush=True)
            if total > 17:
                print(f"ESCAPED: wrote {total} MiB to /tmp", file=sys.stderr, flush=True)
            for where in ("/", "/dev", "/dev/shm", "/bot", "/sdk", "/sdk/cow006", "/proc"):
                try:
                    with open(os.path.join(where, "x"), "wb") as f:
                        f.write(b"x")
                    print(f"ESCAPED: wrote to {where}", file=sys.stderr, flush=True)
                except OSError:
                    pass
        return min(view.hand)
