"""Attack: a reply nested 1000 levels deep, under the size cap (nested_json).  Raw protocol."""

import sys

from cow006 import bot

bot.channel.handshake("nested")
print("ATTACK nested", file=sys.stderr, flush=True)
bot.channel.answer(lambda msg: b"[" * 1000 + b"]" * 1000 + b"\n")
