"""A bot made of plain functions: no class needed.

``play(view)`` returns a card of ``view.hand``; ``take_row(view)`` is optional (the default
takes the row with the fewest heads).  Run it: ``cow006 match examples/bots/function_bot.py``.
"""


def play(view):
    """The highest card that lands on a row without making it the 6th card, else the lowest."""
    safe = []
    for card in view.hand:
        row = view.target_row(card)  # -1: below every row end, we would have to take a row
        if row >= 0 and len(view.rows[row]) < 5:
            safe.append(card)
    return max(safe) if safe else min(view.hand)


def take_row(view):
    """Fewest heads; among equals, the shortest row."""
    return min(range(4), key=lambda r: (view.row_heads(r), len(view.rows[r])))
