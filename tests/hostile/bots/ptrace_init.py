"""Attack: ptrace of pid 1 and of its own parent; process_vm_readv of pid 1."""

import ctypes
import os
import sys

from cow006 import Agent

PTRACE_ATTACH = 16
PTRACE_TRACEME = 0


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK ptrace_init", file=sys.stderr, flush=True)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        for pid in {1, os.getppid()}:
            if libc.ptrace(PTRACE_ATTACH, pid, None, None) == 0:
                print(f"ESCAPED: ptrace attached to {pid}", file=sys.stderr, flush=True)
            else:
                print(f"ptrace_init: {pid}: errno {ctypes.get_errno()}", file=sys.stderr)
        if libc.ptrace(PTRACE_TRACEME, 0, None, None) == 0:
            print("ESCAPED: PTRACE_TRACEME worked", file=sys.stderr, flush=True)
        buf = ctypes.create_string_buffer(64)

        class IOVec(ctypes.Structure):
            _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

        local = IOVec(ctypes.cast(buf, ctypes.c_void_p), 64)
        remote = IOVec(0x400000, 64)
        n = libc.process_vm_readv(1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if n > 0:
            print("ESCAPED: process_vm_readv read pid 1", file=sys.stderr, flush=True)
        print(f"ptrace_init: process_vm_readv errno {ctypes.get_errno()}", file=sys.stderr)

    def play(self, view):
        return min(view.hand)
