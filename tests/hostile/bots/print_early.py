"""Attack: writes replies before being asked (unrequested).  Speaks the protocol by hand."""

import json
import sys

from cow006 import bot

EARLY = b'{"id": 0, "card": 1}\n'


def lowest(msg):
    field = "card" if msg["type"] == "play" else "row"
    value = min(msg["view"]["hand"]) if field == "card" else 0
    return json.dumps({"id": msg["id"], field: value}).encode() + b"\n"


bot.channel.handshake("print_early")
print("ATTACK print_early", file=sys.stderr, flush=True)
bot.channel.write(EARLY)
bot.channel.answer(lowest, notice=lambda msg: EARLY if msg["type"] == "round_start" else None)
