"""Attack: a flood of reply lines nobody asked for (unrequested)."""

import sys

from cow006 import Agent, bot


class Bot(Agent):
    def play(self, view):
        print("ATTACK reply_flood", file=sys.stderr, flush=True)
        line = b'{"id": 999999, "card": 1}\n'
        for _ in range(200):
            bot.channel.write(line * 1000)
        return min(view.hand)
