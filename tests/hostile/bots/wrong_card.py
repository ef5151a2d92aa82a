"""Attack: a card that is not in its hand (illegal_card).  Speaks the protocol by hand."""

import json
import sys

from cow006 import bot


def wrong(msg):
    if msg["type"] == "take_row":
        return json.dumps({"id": msg["id"], "row": 0}).encode() + b"\n"
    hand = msg["view"]["hand"]
    card = next(c for c in range(1, 105) if c not in hand)
    return json.dumps({"id": msg["id"], "card": card}).encode() + b"\n"


bot.channel.handshake("wrong_card")
print("ATTACK wrong_card", file=sys.stderr, flush=True)
bot.channel.answer(wrong)
