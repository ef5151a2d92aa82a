"""Attack: watches the shared read-only files (the SDK, the runtime) with inotify and
fanotify, to see another seat load them; every call must get EPERM."""

import ctypes
import errno
import os
import sys

from cow006 import Agent

IN_ALL = 0xFFF
FAN_REPORT_FID = 0x200  # unprivileged fanotify (Linux 5.13+) needs this mode
FAN_MARK_ADD = 0x1
FAN_ACCESS = 0x1
AT_FDCWD = -100
INOTIFY_INIT = {"x86_64": 253}  # no plain inotify_init on aarch64


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK inotify_watch", file=sys.stderr, flush=True)
        libc = ctypes.CDLL(None, use_errno=True)

        def refused(what, rc):
            err = ctypes.get_errno()
            if rc >= 0 or err != errno.EPERM:
                print(
                    f"ESCAPED: {what} was not refused ({rc}, {os.strerror(err)})", file=sys.stderr
                )
            else:
                print(f"inotify_watch: {what}: {os.strerror(err)}", file=sys.stderr, flush=True)

        nr = INOTIFY_INIT.get(os.uname().machine)
        if nr is not None:
            refused("inotify_init", libc.syscall(nr))
        refused("inotify_init1", libc.inotify_init1(0))
        # On a made-up descriptor: allowed, these fail with EBADF, not EPERM.
        refused("inotify_add_watch", libc.inotify_add_watch(-1, b"/sdk/cow006", IN_ALL))
        refused("inotify_rm_watch", libc.inotify_rm_watch(-1, 1))
        refused("fanotify_init", libc.fanotify_init(FAN_REPORT_FID, os.O_RDONLY))
        libc.fanotify_mark.argtypes = [
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint64,
            ctypes.c_int,
            ctypes.c_char_p,
        ]
        refused(
            "fanotify_mark", libc.fanotify_mark(-1, FAN_MARK_ADD, FAN_ACCESS, AT_FDCWD, b"/sdk")
        )

    def play(self, view):
        return min(view.hand)
