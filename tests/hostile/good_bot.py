"""The well-behaved bot that sits beside every hostile one: it must never fault."""

from cow006 import Agent


class Bot(Agent):
    def play(self, view):
        return max(view.hand)
