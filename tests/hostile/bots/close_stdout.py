"""Attack: closes its protocol output in the middle of the match (crash)."""

import os
import sys
import time

from cow006 import Agent, bot


class Bot(Agent):
    def play(self, view):
        print("ATTACK close_stdout", file=sys.stderr, flush=True)
        os.close(bot.channel.out_fd)
        os.close(1)
        time.sleep(60)
