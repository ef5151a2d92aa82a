"""Attack: CPU starvation.  Forks 30 busy children (as many as the pids cap allows), each in
a session of its own (``setsid``), and answers every request at once itself.

Without a CPU cap per slot, the children take a share of the machine each and a fair bot's
moves take many times longer.  At match end it says how many children ran and how much CPU
they burnt (``cpu_hog: N children, S s of CPU``)."""

import os
import sys
import time

from cow006 import Agent, bot

WANT = 30


def children_cpu(pids):
    ticks = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, IndexError, ValueError):
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


class Bot(Agent):
    def __init__(self):
        self.pids = []

    def play(self, view):
        if (view.round, view.turn) == (0, 0) and bot.sandboxed():  # the first move
            print("ATTACK cpu_hog", file=sys.stderr, flush=True)
            for _ in range(WANT):
                try:
                    pid = os.fork()
                except OSError:
                    break
                if pid == 0:
                    os.setsid()
                    x = 0
                    while True:
                        x += 1
                self.pids.append(pid)
        return min(view.hand)

    def on_match_end(self, result):
        time.sleep(0.05)
        used = children_cpu(self.pids)
        print(
            f"cpu_hog: {len(self.pids)} children, {used:.2f} s of CPU", file=sys.stderr, flush=True
        )
