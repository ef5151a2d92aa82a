"""Attack: takes the machine's AIO pool (16 io_setup contexts of 4096 events each, as the
issue did), and tries the other AIO calls on a made-up context: each must get EPERM."""

import ctypes
import errno
import os
import sys

from cow006 import Agent

NR = {
    "x86_64": {
        "io_setup": 206,
        "io_destroy": 207,
        "io_getevents": 208,
        "io_submit": 209,
        "io_cancel": 210,
        "io_pgetevents": 333,
    },
    "aarch64": {
        "io_setup": 0,
        "io_destroy": 1,
        "io_submit": 2,
        "io_cancel": 3,
        "io_getevents": 4,
        "io_pgetevents": 292,
    },
}


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK aio_pool", file=sys.stderr, flush=True)
        libc = ctypes.CDLL(None, use_errno=True)
        nrs = NR.get(os.uname().machine)
        if nrs is None:
            print(f"aio_pool: no syscall numbers for {os.uname().machine}", file=sys.stderr)
            return
        self.kept = []  # held for the whole match, as a hog would
        for _ in range(16):
            ctx = ctypes.c_ulong(0)
            if libc.syscall(nrs["io_setup"], 4096, ctypes.byref(ctx)) == 0:
                self.kept.append(ctx)
                print(f"ESCAPED: io_setup gave context {ctx.value}", file=sys.stderr, flush=True)
            else:
                print(f"aio_pool: io_setup: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        for name in ("io_submit", "io_getevents", "io_pgetevents", "io_cancel", "io_destroy"):
            # Context 0 is never valid: allowed, these fail with EINVAL or EFAULT, not EPERM.
            rc = libc.syscall(nrs[name], 0, 0, 0, 0, 0, 0)
            err = ctypes.get_errno()
            if rc == 0 or err != errno.EPERM:
                print(f"ESCAPED: {name} was not refused ({os.strerror(err)})", file=sys.stderr)
            else:
                print(f"aio_pool: {name}: {os.strerror(err)}", file=sys.stderr, flush=True)

    def play(self, view):
        return min(view.hand)
