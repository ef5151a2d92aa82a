"""Python starter: the card that takes the fewest heads right now (ties: the highest).

Test it locally:   cow006 match ./bot.py builtin:greedy builtin:safe --seed 1
Submit it:         cow006 submit ./bot.py --agent my-bot --ladder main
"""

from cow006 import Agent


class Bot(Agent):
    def play(self, view):  # simulate(): (row, heads taken, rows after) if the card went alone
        return min(view.hand, key=lambda card: (view.simulate(card)[1], -card))

    def take_row(self, view):  # your card is below every row end: take the cheapest row
        return min(range(4), key=view.row_heads)
