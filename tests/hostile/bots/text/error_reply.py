"""Hostile text: error replies holding a lone surrogate and a NUL: ``{"id": N, "error":
"\\ud800\\u0000"}``.  json.loads accepts both; the fault's detail used to carry them into the
log, the database and every page that shows the match (500s).  Faults three times, so its
seat is forfeited and the fallback plays on."""

import os

from cow006 import bot

bot.channel.handshake("error reply")
os.write(2, b"ATTACK error_reply\n")
# Written by hand: json.dumps would escape them the same way, this is the wire form.
bot.channel.answer(
    lambda msg: b'{"id": %d, "error": "boom \\ud800 \\u0000 \\udfff end"}\n' % msg["id"]
)
