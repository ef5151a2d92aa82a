"""Attack: answers every request twice (unrequested).  Speaks the protocol by hand."""

import json
import sys

from cow006 import bot


def twice(msg):
    field = "card" if msg["type"] == "play" else "row"
    value = min(msg["view"]["hand"]) if field == "card" else 0
    return (json.dumps({"id": msg["id"], field: value}) + "\n").encode() * 2


bot.channel.handshake("double_reply")
print("ATTACK double_reply", file=sys.stderr, flush=True)
bot.channel.answer(twice)
