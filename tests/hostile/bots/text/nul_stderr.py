"""Hostile text: NUL bytes on stderr while it plays, and again once it learns it lost.

PostgreSQL text cannot hold NUL: storing this seat's stderr used to fail, so the match was run
again and again, then failed, voiding the losses it had just taken.  Plays legal cards.
"""

import os
import sys

from cow006 import bot

ch = bot.channel
hello = ch.recv()
ch.send({"type": "ready", "protocol": 1, "name": "nul\x00stderr"})
os.write(2, b"ATTACK nul_stderr \x00\n")

while (msg := ch.recv()) is not None:
    if msg["type"] == "play":
        os.write(2, b"thinking\x00about it\n")
        ch.send({"id": msg["id"], "card": min(msg["view"]["hand"])})
    elif msg["type"] == "take_row":
        ch.send({"id": msg["id"], "row": 0})
    elif msg["type"] == "match_end":
        os.write(2, b"\x00" * 64 + b" I lost\n")
        sys.stderr.flush()
        os._exit(0)
