"""Attack: after ready it never reads its input again, while the host writes views (timeout).

Speaks the protocol by hand."""

import sys
import time

from cow006 import bot

bot.channel.handshake("deaf")
print("ATTACK deaf", file=sys.stderr, flush=True)
while True:
    time.sleep(1)
