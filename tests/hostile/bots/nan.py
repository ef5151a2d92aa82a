"""Attack: NaN as a card (nan).  Speaks the protocol by hand."""

import sys

from cow006 import bot

bot.channel.handshake("nan")
print("ATTACK nan", file=sys.stderr, flush=True)
bot.channel.answer(lambda msg: b'{"id": %d, "card": NaN, "row": NaN}\n' % msg["id"])
