"""Attack: writes one huge file (RLIMIT_FSIZE stops it; Python ignores SIGXFSZ)."""

import sys

from cow006 import Agent


class Bot(Agent):
    def play(self, view):
        if (view.round, view.turn) == (0, 0):  # the first move
            print("ATTACK huge_file", file=sys.stderr, flush=True)
            wrote = 0
            try:
                with open("/tmp/huge", "wb", buffering=0) as f:
                    for _ in range(64):
                        wrote += f.write(b"h" * (1 << 20))
            except OSError as exc:
                print(f"huge_file: stopped: {exc}", file=sys.stderr, flush=True)
            print(f"huge_file: {wrote >> 20} MiB", file=sys.stderr, flush=True)
            if wrote > 8 << 20:
                print(f"ESCAPED: wrote {wrote >> 20} MiB to one file", file=sys.stderr, flush=True)
        return min(view.hand)
