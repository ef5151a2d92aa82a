"""Attack: hunts for the host's environment: its own, pid 1's, every process's."""

import os
import sys

from cow006 import Agent


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK env_canary", file=sys.stderr, flush=True)
        wanted = info.settings.get("canary_env", "")
        found = [f"env {k}={v}" for k, v in os.environ.items()]
        for pid in [p for p in os.listdir("/proc") if p.isdigit()] + ["self"]:
            for what in ("environ", "cmdline"):
                try:
                    with open(f"/proc/{pid}/{what}", "rb") as f:
                        data = f.read()
                except OSError:
                    continue
                found.append(f"/proc/{pid}/{what}: {data!r}")
        for line in found:
            print("env_canary:", line, file=sys.stderr, flush=True)
        if wanted and any(wanted in line for line in found):
            print(f"ESCAPED: saw {wanted}", file=sys.stderr, flush=True)

    def play(self, view):
        return min(view.hand)
