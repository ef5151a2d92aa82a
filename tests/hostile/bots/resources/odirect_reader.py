"""Attack: disk bandwidth.  Reads the biggest file bound into the sandbox (the interpreter's
shared library, or the interpreter) with O_DIRECT, bypassing the page cache, for 1.5 s, and
says how fast it went (``odirect_reader: R MiB/s``): every byte is a real disk read."""

import mmap
import os
import sys
import time

from cow006 import Agent, bot

MiB = 1 << 20


def biggest_mapped_file():
    best, size = "/proc/self/exe", 0
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/"):
                path = parts[5].strip()
                try:
                    n = os.stat(path).st_size
                except OSError:
                    continue
                if n > size:
                    best, size = path, n
    return best, size


class Bot(Agent):
    def play(self, view):
        if (view.round, view.turn) == (0, 0) and bot.sandboxed():  # the first move
            path, size = biggest_mapped_file()
            print(f"ATTACK odirect_reader {path} {size >> 20} MiB", file=sys.stderr, flush=True)
            fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
            buf = mmap.mmap(-1, MiB)  # page-aligned, as O_DIRECT needs
            total, offset = 0, 0
            start = time.monotonic()
            while (elapsed := time.monotonic() - start) < 1.5:
                n = os.preadv(fd, [buf], offset)
                total += n
                offset = offset + n if n == MiB else 0
            os.close(fd)
            print(f"odirect_reader: {total / MiB / elapsed:.1f} MiB/s", file=sys.stderr, flush=True)
        return min(view.hand)
