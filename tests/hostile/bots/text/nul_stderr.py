"""Hostile text: NUL bytes on stderr while it plays, and again once it learns it lost.

PostgreSQL text cannot hold NUL: storing this seat's stderr used to fail, so the match was run
again and again, then failed, voiding the losses it had just taken.  Plays legal cards.
"""

import os
import sys

from cow006 import bot, protocol


def lowest(msg):
    if msg["type"] == "take_row":
        return protocol.encode({"id": msg["id"], "row": 0})
    os.write(2, b"thinking\x00about it\n")
    return protocol.encode({"id": msg["id"], "card": min(msg["view"]["hand"])})


def lost(msg):
    if msg["type"] == "match_end":
        os.write(2, b"\x00" * 64 + b" I lost\n")
        sys.stderr.flush()


bot.channel.handshake("nul\x00stderr")
os.write(2, b"ATTACK nul_stderr \x00\n")
bot.channel.answer(lowest, notice=lost)
