"""Attack: memory spread over processes.  Six forked children each hold 200 MiB (each well
within RLIMIT_AS), 1.2 GiB in all.

The slot's memory cap counts the sum: the slot is killed.  If all six are still holding
their memory a moment later, it says ``ESCAPED``."""

import os
import sys
import time

from cow006 import Agent, bot

MiB = 1 << 20


class Bot(Agent):
    def play(self, view):
        if (view.round, view.turn) == (0, 0) and bot.sandboxed():  # the first move
            print("ATTACK fork_hogs", file=sys.stderr, flush=True)
            r, w = os.pipe()
            pids = []
            for _ in range(6):
                pid = os.fork()
                if pid == 0:
                    os.close(r)
                    hold = bytearray(200 * MiB)
                    hold[::4096] = b"\x01" * (200 * MiB // 4096)  # every page touched
                    os.write(w, b"x")
                    while True:
                        time.sleep(1)
                        hold[0] = 2
                pids.append(pid)
            os.close(w)
            got = 0
            deadline = time.monotonic() + 15
            while got < 6 and time.monotonic() < deadline:
                if not os.read(r, 1):
                    break
                got += 1
            time.sleep(0.5)
            alive = sum(os.waitpid(p, os.WNOHANG) == (0, 0) for p in pids)
            print(f"fork_hogs: {got} children filled, {alive} alive", file=sys.stderr, flush=True)
            if got == 6 and alive == 6:
                print("ESCAPED: 1200 MiB held by six children", file=sys.stderr, flush=True)
        return min(view.hand)
