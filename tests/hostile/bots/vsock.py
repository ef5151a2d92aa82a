"""Attack: opens sockets of other families: AF_VSOCK (the hypervisor), netlink, packet."""

import socket
import sys

from cow006 import Agent

FAMILIES = {"AF_VSOCK": 40, "AF_NETLINK": 16, "AF_PACKET": 17, "AF_INET6": 10}


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK vsock", file=sys.stderr, flush=True)
        for name, family in FAMILIES.items():
            kind = socket.SOCK_RAW if name in ("AF_NETLINK", "AF_PACKET") else socket.SOCK_STREAM
            try:
                s = socket.socket(family, kind)
            except OSError as exc:
                print(f"vsock: {name}: {exc}", file=sys.stderr, flush=True)
                continue
            s.close()  # created, never used
            print(f"ESCAPED: created an {name} socket", file=sys.stderr, flush=True)

    def play(self, view):
        return min(view.hand)
