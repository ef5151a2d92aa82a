"""Attack: reads /etc/shadow, the host's source, another bot's files, root's home."""

import os
import sys

from cow006 import Agent

TARGETS = [
    "/etc/shadow",
    "/etc/passwd",
    "/etc/hostname",
    "/root/.bash_history",
    "/proc/1/root/etc/shadow",
    "/work/main/pyproject.toml",
    "/run/cow006-sandbox/uid-64000.lock",
]


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK read_secrets", file=sys.stderr, flush=True)
        extra = [info.settings.get(k, "") for k in ("host_source", "other_bot", "canary_file")]
        for path in filter(None, [*TARGETS, *extra]):
            try:
                with open(path, "rb") as f:
                    data = f.read(200)
                print(f"ESCAPED: read {path}: {data[:60]!r}", file=sys.stderr, flush=True)
            except OSError as exc:
                print(f"read_secrets: {path}: {exc.strerror}", file=sys.stderr, flush=True)
        try:
            with open(info.settings.get("canary_file", "/nonexistent"), "r+b") as f:
                f.write(b"pwned")
            print("ESCAPED: wrote to the canary file", file=sys.stderr, flush=True)
        except OSError as exc:
            print(f"read_secrets: canary: {exc.strerror}", file=sys.stderr, flush=True)
        for top in ("/", "/bot", "/sdk", "/dev", "/tmp"):
            print(f"read_secrets: {top}: {sorted(os.listdir(top))}", file=sys.stderr, flush=True)

    def play(self, view):
        return min(view.hand)
