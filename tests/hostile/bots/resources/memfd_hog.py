"""Attack: memory that is not in any address space.  Puts 400 MiB in memfds (written, not
mapped: RLIMIT_AS does not see them), then 450 MiB of heap, touched.

The slot's memory cap counts both: the slot is killed before it holds 850 MiB.  If it
survives, it says ``ESCAPED``."""

import os
import sys

from cow006 import Agent, bot

MiB = 1 << 20


class Bot(Agent):
    def play(self, view):
        if (view.round, view.turn) == (0, 0) and bot.sandboxed():  # the first move
            print("ATTACK memfd_hog", file=sys.stderr, flush=True)
            fds, held = [], 0
            chunk = b"\x01" * (16 * MiB)
            for _ in range(25):  # 400 MiB in memfds
                fd = os.memfd_create("hog")
                os.write(fd, chunk)
                fds.append(fd)
                held += 16
            print(f"memfd_hog: {held} MiB in memfds", file=sys.stderr, flush=True)
            heap = []
            try:
                for _ in range(450 // 16):
                    heap.append(bytearray(chunk))
                    held += 16
            except MemoryError:
                print(f"memfd_hog: MemoryError at {held} MiB", file=sys.stderr, flush=True)
            if held >= 800:
                print(f"ESCAPED: held {held} MiB", file=sys.stderr, flush=True)
        return min(view.hand)
