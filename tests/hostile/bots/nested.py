"""Attack: a reply nested 1000 levels deep, under the size cap (nested_json).  Raw protocol."""

import os
import sys

from cow006 import bot

NAME = "nested"
ch = bot.channel
hello = ch.recv()
ch.send({"type": "ready", "protocol": 1, "name": NAME})
print("ATTACK " + NAME, file=sys.stderr, flush=True)

while (msg := ch.recv()) is not None:
    if msg["type"] in ("play", "take_row"):
        ch.write(b"[" * 1000 + b"]" * 1000 + b"\n")
    elif msg["type"] == "match_end":
        os._exit(0)
