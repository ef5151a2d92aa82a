"""Attack: answers every request twice (unrequested).  Speaks the protocol by hand."""

import json
import os
import sys

from cow006 import bot

NAME = "double_reply"
ch = bot.channel
hello = ch.recv()
ch.send({"type": "ready", "protocol": 1, "name": NAME})
print("ATTACK " + NAME, file=sys.stderr, flush=True)

while (msg := ch.recv()) is not None:
    if msg["type"] in ("play", "take_row"):
        field = "card" if msg["type"] == "play" else "row"
        value = min(msg["view"]["hand"]) if field == "card" else 0
        ch.write((json.dumps({"id": msg["id"], field: value}) + "\n").encode() * 2)
    elif msg["type"] == "match_end":
        os._exit(0)
