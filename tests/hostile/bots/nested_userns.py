"""Attack: makes a nested user namespace (and others) to gain capabilities."""

import ctypes
import os
import sys

from cow006 import Agent

FLAGS = (
    ("CLONE_NEWUSER", 0x10000000),
    ("CLONE_NEWNS", 0x00020000),
    ("CLONE_NEWNET", 0x40000000),
    ("CLONE_NEWPID", 0x20000000),
)


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK nested_userns", file=sys.stderr, flush=True)
        libc = ctypes.CDLL(None, use_errno=True)
        for name, flag in FLAGS:
            pid = os.fork()
            if pid == 0:  # try in a child, so a success changes nothing for the bot itself
                os._exit(0 if libc.unshare(flag) == 0 else 1)
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) == 0:
                print(f"ESCAPED: unshare({name}) worked", file=sys.stderr, flush=True)
            else:
                print(f"nested_userns: unshare({name}) refused", file=sys.stderr, flush=True)
        try:
            with open("/proc/sys/user/max_user_namespaces") as f:
                print(f"nested_userns: max_user_namespaces {f.read().strip()}", file=sys.stderr)
        except OSError:
            pass

    def play(self, view):
        return min(view.hand)
