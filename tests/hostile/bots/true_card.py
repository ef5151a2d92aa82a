"""Attack: `true` as a card (bad_type).  Speaks the protocol by hand."""

import json
import sys

from cow006 import bot

bot.channel.handshake("true_card")
print("ATTACK true_card", file=sys.stderr, flush=True)
bot.channel.answer(
    lambda msg: json.dumps({"id": msg["id"], "card": True, "row": True}).encode() + b"\n"
)
