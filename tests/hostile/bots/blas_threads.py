"""Attack: asks numpy's OpenBLAS for 64 threads (the environment says 1) and keeps them busy.

The bot raises ``OPENBLAS_NUM_THREADS`` and ``OMP_NUM_THREADS`` before importing numpy, then
multiplies large matrices.  OpenBLAS starts at most one thread per CPU it may use; whatever it
starts counts against the slot's pids cap (32 tasks) and shares the slot's one core of CPU
quota, so the other seats play on undisturbed.  More tasks than the cap would be an escape.
"""

import os
import sys

from cow006 import Agent

CAP = 32  # Sandbox.nproc: tasks per slot


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK blas_threads", file=sys.stderr, flush=True)
        os.environ["OPENBLAS_NUM_THREADS"] = "64"
        os.environ["OMP_NUM_THREADS"] = "64"
        import numpy as np

        a = np.ones((400, 400))
        for _ in range(5):
            a = (a @ a) / 400.0
        tasks = len(os.listdir("/proc/self/task"))
        print(f"blas_threads: {tasks} tasks after the products", file=sys.stderr, flush=True)
        if tasks > CAP:
            print(f"ESCAPED: {tasks} tasks, past the cap of {CAP}", file=sys.stderr, flush=True)

    def play(self, view):
        return min(view.hand)
