"""Attack: replies that are not JSON (malformed_json).  Speaks the protocol by hand."""

import os
import sys

from cow006 import bot

NAME = "malformed"
ch = bot.channel
hello = ch.recv()
ch.send({"type": "ready", "protocol": 1, "name": NAME})
print("ATTACK " + NAME, file=sys.stderr, flush=True)

while (msg := ch.recv()) is not None:
    if msg["type"] in ("play", "take_row"):
        ch.write(b"{this is not json\n")
    elif msg["type"] == "match_end":
        os._exit(0)
