"""Attack: writes replies before being asked (unrequested).  Speaks the protocol by hand."""

import json
import os
import sys

from cow006 import bot

NAME = "print_early"
ch = bot.channel
hello = ch.recv()
ch.send({"type": "ready", "protocol": 1, "name": NAME})
print("ATTACK " + NAME, file=sys.stderr, flush=True)

ch.write(b'{"id": 0, "card": 1}\n')
while (msg := ch.recv()) is not None:
    if msg["type"] == "round_start":
        ch.write(b'{"id": 0, "card": 1}\n')
    elif msg["type"] in ("play", "take_row"):
        field = "card" if msg["type"] == "play" else "row"
        value = min(msg["view"]["hand"]) if field == "card" else 0
        ch.write(json.dumps({"id": msg["id"], field: value}).encode() + b"\n")
    elif msg["type"] == "match_end":
        os._exit(0)
