"""Attack: replies that are not JSON (malformed_json).  Speaks the protocol by hand."""

import sys

from cow006 import bot

bot.channel.handshake("malformed")
print("ATTACK malformed", file=sys.stderr, flush=True)
bot.channel.answer(lambda msg: b"{this is not json\n")
