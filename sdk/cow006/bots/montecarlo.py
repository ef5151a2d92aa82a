"""The Monte-Carlo built-in bot (``montecarlo``, alias ``best``).

For each decision it draws a fixed number of samples.  A sample deals the cards this seat has
not seen (``view.unseen()``) into the other seats' hands at random, in a random order, which is
also the order those seats play them in the simulation.  Every candidate card is then played out
on that same sample to the end of the round: this turn exactly, the later turns with a fast
rollout policy for this seat.  The card with the least total penalty over the samples wins.
Comparing all candidates on the same samples (common random numbers) makes the differences far
less noisy than the totals themselves.

The simulation keeps a row as three numbers (last card, length, heads): that is all the rules
need, so no row lists are copied per sample.  Randomness comes only from ``self.rng``, seeded in
``on_match_start``; the number of samples is fixed, so a match of built-ins is reproducible from
its seed.  ``view.time_left`` only cuts sampling short as a safety cap.
"""

from __future__ import annotations

import time

from ..cards import HEADS, ROW_LIMIT
from ..view import View
from .simple import SeededAgent

_H = HEADS
_FULL = ROW_LIMIT


def _place_all(ends: list[int], lens: list[int], hs: list[int], cards: list[int]) -> None:
    """Place ``cards`` (ascending) by the rules; a card below every end takes the cheapest row."""
    H = _H
    for c in cards:
        best = -1
        be = 0
        for i in (0, 1, 2, 3):
            e = ends[i]
            if be < e < c:
                best = i
                be = e
        if best < 0:
            best = 0
            bk = hs[0] * 8 + lens[0]
            for i in (1, 2, 3):
                v = hs[i] * 8 + lens[i]
                if v < bk:
                    best = i
                    bk = v
        elif lens[best] < _FULL:
            ends[best] = c
            lens[best] += 1
            hs[best] += H[c]
            continue
        ends[best] = c
        lens[best] = 1
        hs[best] = H[c]


def _policy(rest: list[int], ends: list[int], lens: list[int], hs: list[int]) -> int:
    """The rollout policy for this seat: least immediate cost, then the smallest gap."""
    full = _FULL
    mine = rest[0]
    bk = 1 << 30
    for c in rest:
        best = -1
        be = 0
        for i in (0, 1, 2, 3):
            e = ends[i]
            if be < e < c:
                best = i
                be = e
        if best < 0:
            v = min(hs) * 128 + 64
        elif lens[best] == full:
            v = hs[best] * 128 + c - be
        else:
            v = c - be
        if v < bk:
            bk = v
            mine = c
    return mine


def _rollout(
    ends: list[int],
    lens: list[int],
    hs: list[int],
    mine: int,
    rest: list[int],
    opp: list[int],
    nopp: int,
) -> int:
    """Play ``mine`` now (0: let the policy choose) and ``rest`` later; this seat's penalty.

    ``ends``/``lens``/``hs`` (row ends, lengths, heads) and ``rest`` are consumed.  ``opp``
    holds the other seats' cards, ``nopp`` per turn, in play order.  Later cards of this seat
    are chosen by ``_policy``.  A card below every row end takes the row with fewest heads (then
    fewest cards), for every seat.
    """
    H = _H
    full = _FULL
    pen = 0
    k = 0
    if not mine:
        mine = _policy(rest, ends, lens, hs)
        rest.remove(mine)
    while True:
        cards = opp[k : k + nopp]
        cards.append(mine)
        cards.sort()
        for c in cards:
            best = -1
            be = 0
            for i in (0, 1, 2, 3):
                e = ends[i]
                if be < e < c:
                    best = i
                    be = e
            if best < 0:
                best = 0
                bk = hs[0] * 8 + lens[0]
                for i in (1, 2, 3):
                    v = hs[i] * 8 + lens[i]
                    if v < bk:
                        best = i
                        bk = v
            elif lens[best] < full:
                ends[best] = c
                lens[best] += 1
                hs[best] += H[c]
                continue
            if c == mine:
                pen += hs[best]
            ends[best] = c
            lens[best] = 1
            hs[best] = H[c]
        if not rest:
            return pen
        k += nopp
        mine = _policy(rest, ends, lens, hs)
        rest.remove(mine)


class MonteCarloBot(SeededAgent):
    """Sampling bot: least expected penalty over ``samples`` determinized rollouts."""

    name = "builtin:montecarlo"
    rollout = staticmethod(_rollout)

    def __init__(self, samples: int = 100) -> None:
        super().__init__()
        self.samples = samples

    def play(self, view: View) -> int:
        hand = list(view.hand)
        h = len(hand)
        if h == 1:
            return hand[0]
        rows = view.rows
        ends0 = [r[-1] for r in rows]
        lens0 = [len(r) for r in rows]
        hs0 = [sum(_H[c] for c in r) for r in rows]
        unseen = view.unseen()
        nopp = view.n_players - 1
        need = nopp * h
        sample = self.rng.sample
        rollout = self.rollout
        totals = [0] * h
        rests = [hand[:j] + hand[j + 1 :] for j in range(h)]
        deadline = self._deadline(view)
        for s in range(self.samples):
            opp = sample(unseen, need)
            for j in range(h):
                totals[j] += rollout(ends0[:], lens0[:], hs0[:], hand[j], rests[j][:], opp, nopp)
            if deadline is not None and s & 7 == 7 and time.perf_counter() > deadline:
                break
        best = min(range(h), key=totals.__getitem__)
        return hand[best]

    def take_row(self, view: View) -> int:
        """The row whose heads plus the expected penalty of the rest of the round is least.

        The rest of this turn is known (``view.current``): the higher cards are placed
        exactly after this one, for each choice of row, then the later turns are sampled.
        """
        card = view.card if view.card is not None else 0
        rows = view.rows
        hand = list(view.hand)
        h = len(hand)
        later = sorted(c for c in view.current or () if c > card)
        taken = [sum(_H[c] for c in r) for r in rows]
        starts = []
        for r in range(4):
            ends = [x[-1] for x in rows]
            lens = [len(x) for x in rows]
            hs = taken[:]
            ends[r], lens[r], hs[r] = card, 1, _H[card]
            _place_all(ends, lens, hs, later)
            starts.append((ends, lens, hs))
        totals = [t * self.samples for t in taken]
        if h:
            unseen = view.unseen()
            nopp = view.n_players - 1
            need = nopp * h
            sample = self.rng.sample
            rollout = self.rollout
            deadline = self._deadline(view)
            for s in range(self.samples):
                opp = sample(unseen, need)
                for r in range(4):
                    ends, lens, hs = starts[r]
                    totals[r] += rollout(ends[:], lens[:], hs[:], 0, hand[:], opp, nopp)
                if deadline is not None and s & 7 == 7 and time.perf_counter() > deadline:
                    break
        # Ties (e.g. the last turn) go to the cheapest row, then the shortest, then index.
        return min(range(4), key=lambda r: (totals[r], taken[r], len(rows[r]), r))

    @staticmethod
    def _deadline(view: View) -> float | None:
        """A perf_counter deadline from ``view.time_left``: half of it, kept as a safety cap."""
        if view.time_left is None:
            return None
        return time.perf_counter() + max(0.0, view.time_left) * 0.5
