"""Attack: 64 MiB on the protocol stream without a newline (oversize)."""

import sys
import time

from cow006 import Agent, bot


class Bot(Agent):
    def play(self, view):
        print("ATTACK stdout_no_newline", file=sys.stderr, flush=True)
        block = b"7" * (1 << 20)
        for _ in range(64):
            bot.channel.write(block)
        time.sleep(60)
