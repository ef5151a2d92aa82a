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
its seeds (the match seed and the agent seeds).  ``view.time_left`` only cuts sampling short
as a safety cap.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left

from ..cards import DECK_SIZE, END_SCORE, HEADS, ROW_LIMIT
from ..view import View
from .simple import SeededAgent

_H = HEADS
_FULL = ROW_LIMIT

# The simulation keeps the rows sorted by their last card: a card always lands on the row
# whose end is the largest below it and replaces that end, so the order is kept, and the row
# a card goes to is one ``bisect`` away.  Only a take of a row by a card below every end
# changes the order: that row becomes the first.  The real row indices are only needed in
# ``take_row``, which maps them back.
Rows = tuple[list[int], list[int], list[int]]  # (ends ascending, lengths, heads)


def _sorted_rows(triples: list[tuple[int, int, int]]) -> Rows:
    """(end, length, heads) per row -> the simulation's sorted column lists."""
    triples = sorted(triples)
    return [t[0] for t in triples], [t[1] for t in triples], [t[2] for t in triples]


def _cheapest(hs: list[int], lens: list[int]) -> int:
    """The row a seat takes when its card is below every end: fewest heads, then fewest cards."""
    best = 0
    bk = hs[0] * 8 + lens[0]
    for i in (1, 2, 3):
        v = hs[i] * 8 + lens[i]
        if v < bk:
            best = i
            bk = v
    return best


def _place_all(
    ends: list[int],
    lens: list[int],
    hs: list[int],
    cards: list[int],
    owner: list[int] | None = None,
    pens: list[int] | None = None,
) -> None:
    """Place ``cards`` (ascending) by the rules, every seat taking the cheapest row if it must.

    With ``owner`` (card -> seat slot) and ``pens``, the heads taken are added to ``pens``.
    """
    H = _H
    for c in cards:
        i = bisect_left(ends, c) - 1
        if i < 0:
            i = _cheapest(hs, lens)
            if pens is not None and owner is not None:
                pens[owner[c]] += hs[i]
            del ends[i], lens[i], hs[i]
            ends.insert(0, c)
            lens.insert(0, 1)
            hs.insert(0, H[c])
        elif lens[i] == _FULL:
            if pens is not None and owner is not None:
                pens[owner[c]] += hs[i]
            ends[i] = c
            lens[i] = 1
            hs[i] = H[c]
        else:
            ends[i] = c
            lens[i] += 1
            hs[i] += H[c]


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

    ``ends``/``lens``/``hs`` (sorted rows) and ``rest`` are consumed.  ``opp`` holds the other
    seats' cards, ``nopp`` per turn, in play order.  This seat's later cards follow a greedy
    rule: the least immediate cost if the card were alone, then the snuggest fit.  (Smarter
    rollout policies, even one that sees the sampled cards of the turn, measured no better:
    the sample count matters far more.)  A card below every end takes the cheapest row.
    """
    H = _H
    full = _FULL
    bl = bisect_left
    pen = 0
    k = 0
    while True:
        if not mine:
            # The rollout policy: cost * 128 + gap; a card below every end costs the
            # cheapest row plus half a head, so a free fit is preferred to a 0-head take.
            bk = 1 << 30
            for c in rest:
                i = bl(ends, c) - 1
                if i < 0:
                    v = min(hs) * 128 + 64
                elif lens[i] == full:
                    v = hs[i] * 128 + c - ends[i]
                else:
                    v = c - ends[i]
                if v < bk:
                    bk = v
                    mine = c
            rest.remove(mine)
        cards = opp[k : k + nopp]
        cards.append(mine)
        cards.sort()
        for c in cards:
            i = bl(ends, c) - 1
            if i < 0:
                i = 0
                bk = hs[0] * 8 + lens[0]
                for j in (1, 2, 3):
                    v = hs[j] * 8 + lens[j]
                    if v < bk:
                        i = j
                        bk = v
                if c == mine:
                    pen += hs[i]
                del ends[i], lens[i], hs[i]
                ends.insert(0, c)
                lens.insert(0, 1)
                hs.insert(0, H[c])
            elif lens[i] == full:
                if c == mine:
                    pen += hs[i]
                ends[i] = c
                lens[i] = 1
                hs[i] = H[c]
            else:
                ends[i] = c
                lens[i] += 1
                hs[i] += H[c]
        if not rest:
            return pen
        k += nopp
        mine = 0


def _rollout_pens(
    ends: list[int],
    lens: list[int],
    hs: list[int],
    mine: int,
    rest: list[int],
    opp: list[int],
    nopp: int,
    owner: list[int],
    pens: list[int],
) -> None:
    """``_rollout`` that adds every seat's heads to ``pens`` (slot ``owner[card]``).

    Slots ``0..nopp-1`` are the other seats, slot ``nopp`` this seat.  Slower than
    ``_rollout``, so it is only used when the match may end this round.
    """
    H = _H
    full = _FULL
    bl = bisect_left
    k = 0
    while True:
        if not mine:
            bk = 1 << 30
            for c in rest:
                i = bl(ends, c) - 1
                if i < 0:
                    v = min(hs) * 128 + 64
                elif lens[i] == full:
                    v = hs[i] * 128 + c - ends[i]
                else:
                    v = c - ends[i]
                if v < bk:
                    bk = v
                    mine = c
            rest.remove(mine)
        cards = opp[k : k + nopp]
        cards.append(mine)
        cards.sort()
        for c in cards:
            i = bl(ends, c) - 1
            if i < 0:
                i = 0
                bk = hs[0] * 8 + lens[0]
                for j in (1, 2, 3):
                    v = hs[j] * 8 + lens[j]
                    if v < bk:
                        i = j
                        bk = v
                pens[owner[c]] += hs[i]
                del ends[i], lens[i], hs[i]
                ends.insert(0, c)
                lens.insert(0, 1)
                hs.insert(0, H[c])
            elif lens[i] == full:
                pens[owner[c]] += hs[i]
                ends[i] = c
                lens[i] = 1
                hs[i] = H[c]
            else:
                ends[i] = c
                lens[i] += 1
                hs[i] += H[c]
        if not rest:
            return
        k += nopp
        mine = 0


def _p_win_later(lead: float, top: float) -> float:
    """Chance to win a match that goes on, from the totals after this round.

    ``lead``: the lowest other total minus this seat's; ``top``: the highest total.  A logistic
    fit of ``montecarlo`` against three ``random`` (2,451 round starts of 600 matches).
    """
    x = lead / 10
    m = top / END_SCORE
    z = 2.767 + 0.943 * x - 1.018 * m + 1.195 * x * m
    if z < -30:
        return 0.0
    return 1.0 / (1.0 + math.exp(-z))


# A candidate decision: the sorted rows it starts from, this seat's card now (0: the policy
# chooses), the cards it keeps, and the heads every seat slot has taken by the decision itself
# (slots as in ``_rollout_pens``: the other seats, then this seat last).
Candidate = tuple[Rows, int, list[int], list[int]]


class MonteCarloBot(SeededAgent):
    """Sampling bot: least expected penalty over determinized rollouts, with early pruning.

    ``samples`` fixes the budget: ``samples`` rollouts per candidate.  Every ``batch``
    samples, a candidate whose mean is worse than the leader's by more than ``z`` standard
    errors of the paired difference is dropped; its share of the budget goes to the candidates
    still in the race (up to ``max_factor * samples`` samples).  With one candidate left, the
    decision is made.

    What is minimized is this seat's penalty for the rest of the round, except once some total
    (with this round's heads so far) reaches ``endgame``: then the match may end with this
    round, and each sample is also scored by whether this seat wins (``win_weight`` heads for
    a whole win): a win if the match ends and no other total is lower, else ``_p_win_later``.
    """

    name = "builtin:montecarlo"
    rollout = staticmethod(_rollout)

    def __init__(
        self,
        samples: int = 200,
        batch: int = 16,
        z: float = 2.5,
        max_factor: float = 3.0,
        endgame: int | None = 36,
        win_weight: float = 40.0,
    ) -> None:
        super().__init__()
        self.samples = samples
        self.batch = batch
        self.z = z
        self.max_factor = max_factor
        self.endgame = endgame
        self.win_weight = win_weight

    def play(self, view: View) -> int:
        hand = view.hand
        h = len(hand)
        if h == 1:
            return hand[0]
        rows = _sorted_rows([(r[-1], len(r), sum(_H[c] for c in r)) for r in view.rows])
        zero = [0] * view.n_players
        cands: list[Candidate] = [(rows, c, [x for x in hand if x != c], zero) for c in hand]
        return hand[self._choose(view, cands, h)]

    def take_row(self, view: View) -> int:
        """The row whose heads plus the expected penalty of the rest of the round is least.

        The rest of this turn is known (``view.current``): its higher cards are placed
        exactly, for each choice of row, before the later turns are sampled.
        """
        card = view.card if view.card is not None else 0
        rows = view.rows
        hand = list(view.hand)
        if not hand:
            # The last turn: nothing follows, so only the heads taken count.
            return view.cheapest_row()
        me = view.seat
        nopp = view.n_players - 1
        current = view.current or ()
        owner = [nopp] * (DECK_SIZE + 1)
        for seat, c in enumerate(current):
            if seat != me:
                owner[c] = seat if seat < me else seat - 1
        later = sorted(c for c in current if c > card)
        taken = [sum(_H[c] for c in r) for r in rows]
        cands: list[Candidate] = []
        for r in range(len(rows)):
            triples = [(x[-1], len(x), taken[i]) for i, x in enumerate(rows)]
            triples[r] = (card, 1, _H[card])
            start = _sorted_rows(triples)
            pens = [0] * (nopp + 1)
            pens[nopp] = taken[r]
            _place_all(*start, later, owner, pens)
            cands.append((start, 0, hand, pens))
        return self._choose(view, cands, len(hand))

    def _choose(self, view: View, cands: list[Candidate], h: int) -> int:
        """Index of the candidate with the least mean value over the sampled rollouts."""
        me = view.seat
        totals = [s + p for s, p in zip(view.scores, view.penalties, strict=True)]
        if self.endgame is not None and max(totals) >= self.endgame:
            # Slots: the other seats in seat order, then this seat.
            base = totals[:me] + totals[me + 1 :] + [totals[me]]
            return self._search(view, cands, h, base)
        return self._search(view, cands, h, None)

    def _search(self, view: View, cands: list[Candidate], h: int, base: list[int] | None) -> int:
        """The sampling loop.  ``base``: totals by slot, for the end-of-match scoring (or None)."""
        n = len(cands)
        hand = view.hand
        unseen = view.unseen()
        nopp = view.n_players - 1
        need = nopp * h
        sample = self.rng.sample
        rollout = self.rollout
        deadline = self._deadline(view)
        vals: list[list[float]] = [[] for _ in range(n)]
        alive = list(range(n))
        budget = self.samples * n
        cap = int(self.samples * self.max_factor)
        batch = self.batch
        used = 0
        s = 0
        if base is not None:
            owner = [nopp] * (DECK_SIZE + 1)
            slots = range(nopp)
            weight = self.win_weight
        while used < budget and s < cap:
            opp = sample(unseen, need)
            if base is None:
                for j in alive:
                    (ends, lens, hs), first, rest, pre = cands[j]
                    pen = rollout(ends[:], lens[:], hs[:], first, rest[:], opp, nopp)
                    vals[j].append(pen + pre[-1])
            else:
                for k, c in enumerate(opp):
                    owner[c] = k % nopp
                for c in hand:
                    owner[c] = nopp
                for j in alive:
                    (ends, lens, hs), first, rest, pre = cands[j]
                    pens = pre[:]
                    _rollout_pens(ends[:], lens[:], hs[:], first, rest[:], opp, nopp, owner, pens)
                    mine = base[nopp] + pens[nopp]
                    low = min([base[i] + pens[i] for i in slots])
                    top = max(max(base[i] + pens[i] for i in slots), mine)
                    if top >= END_SCORE:
                        won = 1.0 if mine <= low else 0.0
                    else:
                        won = _p_win_later(low - mine, top)
                    vals[j].append(pens[nopp] - weight * won)
            used += len(alive)
            s += 1
            if s % batch == 0:
                alive = self._prune(alive, vals, s)
                if len(alive) == 1:
                    break
                if deadline is not None and time.perf_counter() > deadline:
                    break
        return min(alive, key=lambda j: (sum(vals[j]), j))

    def _prune(self, alive: list[int], vals: list[list[float]], s: int) -> list[int]:
        """Drop the candidates clearly worse than the leader (paired z-test on the samples)."""
        leader = min(alive, key=lambda j: sum(vals[j]))
        lv = vals[leader]
        z = self.z
        keep = []
        for j in alive:
            if j != leader:
                d = [a - b for a, b in zip(vals[j], lv, strict=True)]
                mean = sum(d) / s
                var = sum((x - mean) ** 2 for x in d) / (s - 1)
                if mean > z * (var / s) ** 0.5:
                    continue
            keep.append(j)
        return keep

    @staticmethod
    def _deadline(view: View) -> float | None:
        """A perf_counter deadline from ``view.time_left``: half of it, kept as a safety cap."""
        if view.time_left is None:
            return None
        return time.perf_counter() + max(0.0, view.time_left) * 0.5
