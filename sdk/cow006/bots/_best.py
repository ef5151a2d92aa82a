"""The strongest built-in (``best``): ``montecarlo-v1``'s search with an opponent model.

``montecarlo-v1`` (``_montecarlo.py``) deals the unseen cards into the other hands at random
and lets the other seats play them in a random order.  Real opponents do not: they avoid a 6th
card and fill the snug gaps, and the cards they lay this turn decide most of what this seat's
card takes.  ``BestBot`` keeps the same search (common random numbers, paired pruning, match
score awareness near 66) and changes the sampled worlds: after the unseen cards are dealt, each
other seat's card of the turn being decided is, with probability ``1 - eps``, the one a greedy
player would pick from its sampled hand on the current rows; its other cards keep their random
order for the later turns.  The choice is made once per sample, before the candidates are
played out on it, so every candidate still meets the same worlds.

Randomness comes only from ``self.rng`` (seeded in ``on_match_start``) and the sample budget is
fixed, so a match of built-ins is reproducible from its seeds; ``view.time_left`` only cuts
sampling short as a safety cap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .._view import View
from ..cards import ROW_LIMIT
from ..engine import ends_below, rule_rows
from ._montecarlo import MonteCarloBot


def greedy_first(
    ends: list[int],
    lens: list[int],
    hs: list[int],
    opp: list[int],
    nopp: int,
    slots: Iterable[int],
) -> None:
    """Move the greedy card of each seat slot in ``slots`` to that slot's place of turn one.

    ``opp`` is a sample as the rollout reads it: the card at index ``k`` belongs to slot
    ``k % nopp`` and is played on turn ``k // nopp``.  For slot ``j`` the card chosen among
    ``opp[j::nopp]`` is the one that costs least on the rows ``ends``/``lens``/``hs`` (sorted
    by end) as if it were alone: a fit that makes no 6th card first, the snuggest gap first;
    then a card below every end (the cheapest row, the lowest such card); then a 6th card (the
    fewest heads, the snuggest).  It swaps places with ``opp[j]``; nothing else moves.
    """
    below = ends_below
    full = ROW_LIMIT
    low = min(hs)
    n = len(opp)
    for j in slots:
        best = j
        bk = 1 << 30
        for k in range(j, n, nopp):
            c = opp[k]
            i = below(ends, c) - 1
            if i < 0:
                v = low * 256 + 128 + c
            elif lens[i] == full:
                v = hs[i] * 256 + c - ends[i]
            else:
                v = c - ends[i]
            if v < bk:
                bk = v
                best = k
        if best != j:
            opp[j], opp[best] = opp[best], opp[j]


class BestBot(MonteCarloBot):
    """``montecarlo-v1`` whose sampled opponents play this turn's card greedily.

    ``eps``: the chance, per other seat and sample, that it plays its random card instead (a
    hedge against opponents who are not greedy).  The other parameters are
    ``MonteCarloBot``'s.
    """

    name = "builtin:best"

    def __init__(
        self,
        samples: int = 200,
        batch: int = 16,
        z: float = 2.5,
        max_factor: float = 3.0,
        endgame: int | None = 36,
        win_weight: float = 40.0,
        eps: float = 0.25,
    ) -> None:
        super().__init__(samples, batch, z, max_factor, endgame, win_weight)
        self.eps = eps

    def _draw(self, view: View) -> Callable[[list[int], int], list[int]]:
        """``rng.sample``, then the greedy card of this turn for the modelled seats.

        Only for a card to play: in ``take_row`` this turn's cards are known already.
        """
        draw = self.rng.sample
        if view.card is not None:
            return draw
        ends, lens, hs, _ = rule_rows(view.rows)
        nopp = view.n_players - 1
        eps = self.eps
        rnd = self.rng.random

        def sample(population: list[int], k: int) -> list[int]:
            opp = draw(population, k)
            slots = range(nopp) if eps <= 0.0 else [j for j in range(nopp) if rnd() >= eps]
            greedy_first(ends, lens, hs, opp, nopp, slots)
            return opp

        return sample
