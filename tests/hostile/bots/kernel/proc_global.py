"""Attack: reads the host's global /proc files (load, CPU and pressure counters, boot id,
kernel command line, symbols, locks...) and asks sysinfo() for the load, to time the other
seats or name the machine.  It prints a digest of each file (``PROC name sha256``) for the
test to compare with the neutral contents, and with what the host itself reads there."""

import hashlib
import os
import sys

from cow006 import Agent
from cow006.sandbox import PROC_MASKS


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK proc_global", file=sys.stderr, flush=True)
        for name in PROC_MASKS:
            try:
                with open(f"/proc/{name}", "rb") as f:
                    data = f.read()
            except OSError as exc:
                print(f"PROC {name} {exc.strerror}", file=sys.stderr, flush=True)
                continue
            print(f"PROC {name} {hashlib.sha256(data).hexdigest()}", file=sys.stderr, flush=True)
        try:
            load = os.getloadavg()  # the C library asks sysinfo(), not /proc/loadavg
            print(f"ESCAPED: getloadavg gave {load}", file=sys.stderr, flush=True)
        except OSError:
            print("proc_global: load unobtainable", file=sys.stderr, flush=True)
        print(f"proc_global: cpus {os.cpu_count()}", file=sys.stderr, flush=True)

    def play(self, view):
        return min(view.hand)
