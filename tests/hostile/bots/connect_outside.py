"""Attack: connects to an outside address.  It only ever tries from inside an empty network
namespace (no route but loopback): never from a host that could really send the packet."""

import socket
import sys

from cow006 import Agent


def routes():
    try:
        with open("/proc/net/route") as f:
            return [ln.split()[0] for ln in f.readlines()[1:] if ln.strip()]
    except OSError:
        return ["unknown"]


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK connect_outside", file=sys.stderr, flush=True)
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        except OSError as exc:
            print(f"connect_outside: socket: {exc}", file=sys.stderr, flush=True)
            return
        with s:
            if routes():  # not an empty namespace: never send anything
                print(f"ESCAPED: an AF_INET socket with routes {routes()}", file=sys.stderr)
                return
            s.settimeout(0.5)
            try:
                s.connect(("10.255.255.1", 80))
                print("ESCAPED: connected to 10.255.255.1:80", file=sys.stderr, flush=True)
            except OSError as exc:
                print(f"connect_outside: connect: {exc}", file=sys.stderr, flush=True)
            print("ESCAPED: could create an AF_INET socket", file=sys.stderr, flush=True)

    def play(self, view):
        return min(view.hand)
