"""Attack: a card that is not in its hand (illegal_card).  Speaks the protocol by hand."""

import json
import os
import sys

from cow006 import bot

NAME = "wrong_card"
ch = bot.channel
hello = ch.recv()
ch.send({"type": "ready", "protocol": 1, "name": NAME})
print("ATTACK " + NAME, file=sys.stderr, flush=True)

while (msg := ch.recv()) is not None:
    if msg["type"] == "play":
        hand = msg["view"]["hand"]
        card = next(c for c in range(1, 105) if c not in hand)
        ch.write(json.dumps({"id": msg["id"], "card": card}).encode() + b"\n")
    elif msg["type"] == "take_row":
        ch.write(json.dumps({"id": msg["id"], "row": 0}).encode() + b"\n")
    elif msg["type"] == "match_end":
        os._exit(0)
