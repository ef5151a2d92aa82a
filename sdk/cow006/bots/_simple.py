"""The simple built-in bots: ``random``, ``lowest`` and the heuristics ``greedy`` and ``safe``.

They are cheap (well under a millisecond per decision), deterministic given their agent seeds,
and meant as sparring partners and baselines for the Monte-Carlo bot in ``montecarlo.py``.

* ``random``  plays a uniformly random card of its hand; when it must take a row it takes the
  cheapest one (fewest heads), which is the SDK's default ``Agent.take_row`` and the fallback the
  runner uses, so "random" means "random card choice", not "random blunders".
* ``lowest``  always plays its lowest card and takes the cheapest row: exactly what the runner
  plays for a faulted or forfeited seat, so it shows what such a seat is worth.
* ``greedy``  plays the card whose placement on the current rows costs least if no other card of
  the turn interfered, preferring a card that fits snugly after its row end.
* ``safe``    estimates, for every card, the chance that the other seats' cards of the same turn
  land between the row end and it and so make it the 6th card, and plays the card with the
  lowest expected cost.
"""

from __future__ import annotations

import random
from bisect import bisect_left

from .._agent import Agent, MatchInfo
from .._faults import fallback_card
from .._view import View
from ..cards import HEADS, ROW_LIMIT

# Mean heads of a card over the deck: the expected heads of an unknown card.
_MEAN_HEADS = sum(HEADS) / (len(HEADS) - 1)


class SeededAgent(Agent):
    """An agent whose randomness comes from ``self.rng``, seeded from its agent seed.

    Before ``on_match_start`` (an agent used outside ``play_match``) the generator is seeded
    with 0, so such use is reproducible too.
    """

    def __init__(self) -> None:
        self.rng = random.Random(0)

    def on_match_start(self, info: MatchInfo) -> None:
        self.rng = random.Random(info.seed)


class RandomBot(SeededAgent):
    """Uniformly random legal card; takes the cheapest row (the SDK default)."""

    name = "builtin:random"

    def play(self, view: View) -> int:
        return self.rng.choice(view.hand)


class LowestBot(SeededAgent):
    """Always the lowest card, the cheapest row: the runner's fallback for a faulted seat."""

    name = "builtin:lowest"

    def play(self, view: View) -> int:
        return fallback_card(view.hand)


class GreedyBot(SeededAgent):
    """Plays the card that costs least right now, as if it were the only card of the turn.

    Cost: heads of the row the card would take (a 6th card, or a card below every row end,
    which takes the cheapest row); ties go to the card closest above its row end, because the
    smaller that gap, the less likely another seat's card slips in before it.  A card below
    every end is ranked after the free cards that fit: taking even a 1-head row is a cost.
    """

    name = "builtin:greedy"

    def play(self, view: View) -> int:
        rows = view.rows
        best_card, best_key = view.hand[0], (1 << 30, 0, 0)
        cheapest = min(view.row_heads())
        for c in view.hand:
            row = view.target_row(c)
            if row < 0:
                # Below every end: costs the cheapest row; among such, keep the lowest card
                # for that job and spend the higher ones (they can still fit later).
                key = (cheapest, 1, c)
            else:
                _, cost, _ = view.simulate(c)  # the heads it takes as the row's 6th card
                key = (cost, 0, c - rows[row][-1])
            if key < best_key:
                best_card, best_key = c, key
        return best_card

    def take_row(self, view: View) -> int:
        return view.cheapest_row()


class SafeBot(SeededAgent):
    """Plays the card with the lowest expected cost this turn, counting the other seats' cards.

    For a card ``c`` going after row end ``e`` in a row of ``L`` cards, each other seat plays one
    card; a card of theirs in ``(e, c)`` lands first.  With ``u`` unseen cards in that gap out of
    ``U`` unseen, the number ``k`` of such cards is about Binomial(n-1, u/U), and ``c`` becomes a
    6th card when ``L + k == 5``.  A card below every row end costs the cheapest row, and a
    small term prefers spending high cards while rows are short (they only get riskier).
    """

    name = "builtin:safe"

    def play(self, view: View) -> int:
        unseen = view.unseen()
        n_unseen = max(1, len(unseen))
        others = view.n_players - 1
        rows = view.rows
        row_heads = view.row_heads()
        cheapest = min(row_heads)
        best_card, best_cost = view.hand[0], float("inf")
        for c in view.hand:
            row = view.target_row(c)
            if row < 0:
                # Someone lower may take a row first and change the cheapest; ignore that.
                cost = cheapest + 0.5
            else:
                end = rows[row][-1]
                length = len(rows[row])
                gap = bisect_left(unseen, c) - bisect_left(unseen, end)
                p = min(gap / n_unseen, 0.999)  # 1.0 would break the recurrence below
                cost = self._risk(length, p, others, row_heads[row])
                cost += 0.001 * (c - end)  # tie-break: snug fits first
            if cost < best_cost:
                best_card, best_cost = c, cost
        return best_card

    @staticmethod
    def _risk(length: int, p: float, others: int, heads: int) -> float:
        """Expected heads taken by a card placed after ``k ~ Bin(others, p)`` other cards."""
        cost = 0.0
        prob_k = (1 - p) ** others  # P(k = 0)
        for k in range(others + 1):
            if length + k == ROW_LIMIT:
                cost += prob_k * (heads + k * _MEAN_HEADS)
            if k < others:
                prob_k *= (others - k) / (k + 1) * p / (1 - p)
        return cost

    def take_row(self, view: View) -> int:
        return view.cheapest_row()
