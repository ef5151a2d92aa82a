"""Attack: `true` as a card (bad_type).  Speaks the protocol by hand."""

import json
import os
import sys

from cow006 import bot

NAME = "true_card"
ch = bot.channel
hello = ch.recv()
ch.send({"type": "ready", "protocol": 1, "name": NAME})
print("ATTACK " + NAME, file=sys.stderr, flush=True)

while (msg := ch.recv()) is not None:
    if msg["type"] in ("play", "take_row"):
        ch.write(json.dumps({"id": msg["id"], "card": True, "row": True}).encode() + b"\n")
    elif msg["type"] == "match_end":
        os._exit(0)
