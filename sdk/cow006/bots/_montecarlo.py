"""The Monte-Carlo built-in bot (``montecarlo-v1``, alias ``montecarlo``; ``best`` builds on it).

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
from collections.abc import Callable

from .._view import View
from ..cards import DECK_SIZE, END_SCORE, N_ROWS, ROW_LIMIT
from ..engine import cheapest, ends_below, lay, rule_rows
from ._simple import SeededAgent

# The simulation keeps the rows as the placement rule reads them (``cow006.engine``): their
# ends ascending, with the lengths and heads of those rows.  A card always lands on the row
# whose end is the largest below it and replaces that end, so the order is kept, and the row
# a card goes to is one ``bisect`` away (``engine.ends_below``).  The real row indices are
# only needed in ``take_row``, which maps them back.
Rows = tuple[list[int], list[int], list[int]]  # (ends ascending, lengths, heads)
# Called before each turn of a rollout: (ends, lengths, heads, the other seats' cards, the
# index of this turn's first card among them).
TurnHook = Callable[[list[int], list[int], list[int], list[int], int], None]
# A rollout as ``MonteCarloBot._search`` calls it: ``_rollout``'s arguments but the hook.
Rollout = Callable[
    [list[int], list[int], list[int], int, list[int], list[int], int, list[int], list[int], bool],
    None,
]


def _rollout(
    ends: list[int],
    lens: list[int],
    hs: list[int],
    mine: int,
    rest: list[int],
    opp: list[int],
    nopp: int,
    owner: list[int],
    pens: list[int],
    every: bool,
    before_turn: TurnHook | None = None,
) -> None:
    """Play ``mine`` now (0: let the policy choose) and ``rest`` later, to the round's end.

    ``ends``/``lens``/``hs`` (sorted rows) and ``rest`` are consumed.  ``opp`` holds the other
    seats' cards, ``nopp`` per turn, in play order; each turn is placed by the rule
    (``engine.lay``), and a card below every end takes the cheapest row.  The heads each card
    takes are added to ``pens[owner[card]]``.  ``every``: every seat's heads count (the end
    of the match), not only this seat's.  This seat's later cards follow a greedy rule: the
    least immediate cost if the card were alone, then the snuggest fit.  (Smarter rollout
    policies, even one that sees the sampled cards of the turn, measured no better: the
    sample count matters far more.)  ``before_turn`` (an opponent model: ``_best``) may
    reorder ``opp`` from index ``k`` on before each turn ``k // nopp`` is laid.
    """
    k = 0
    below = ends_below
    full = ROW_LIMIT
    last = N_ROWS - 1
    while True:
        if before_turn is not None:
            before_turn(ends, lens, hs, opp, k)
        if not mine:
            if len(rest) == 1:
                mine = rest.pop()
            else:
                # The rollout policy: cost * 128 + gap; a card below every end costs the
                # cheapest row plus half a head, so a free fit is preferred to a 0-head take.
                bk = 1 << 30
                after = 0
                for c in rest:
                    if c < after:
                        # Up to the next end, the cards go where the card before went, with
                        # larger gaps: none of them can be better (a tie keeps the lower).
                        continue
                    i = below(ends, c) - 1
                    after = ends[i + 1] if i < last else DECK_SIZE + 1
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
        if not rest and not every:
            # This seat's last card: the higher cards after it change nothing it takes.
            del cards[cards.index(mine) + 1 :]
        # A card below every end (only the turn's lowest can be): its player takes the
        # cheapest row (fewest heads, then fewest cards, then the lowest end).
        lowest = -1 if below(ends, cards[0]) else cheapest(hs, lens)
        lay(ends, lens, hs, cards, lowest, owner, pens)
        if not rest:
            return
        k += nopp
        mine = 0


def _score(base: list[int], pens: list[int], me: int, others: range, weight: float) -> float:
    """A sample's value near the end of a match (lower is better): the heads seat ``me``
    takes in the round played out (``pens``, on top of the totals ``base``), less ``weight``
    times whether it wins the match: a win if a total reaches 66 and no other is lower,
    else the chance that its lead holds (``_p_win_later``)."""
    mine = base[me] + pens[me]
    totals = [base[i] + pens[i] for i in others]
    low = min(totals)
    top = max(max(totals), mine)
    won = (1.0 if mine <= low else 0.0) if top >= END_SCORE else _p_win_later(low - mine, top)
    return pens[me] - weight * won


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
# (slots: the other seats in seat order, then this seat last).
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
    # One rollout of ``_search`` (a subclass may model the other seats in it: ``_best``).
    rollout: Rollout = staticmethod(_rollout)

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
        self.samples, self.batch, self.z = samples, batch, z
        self.max_factor, self.endgame, self.win_weight = max_factor, endgame, win_weight

    def play(self, view: View) -> int:
        hand = view.hand
        h = len(hand)
        if h == 1:
            return hand[0]
        ends, lens, hs, _ = rule_rows(view.rows)
        rows = (ends, lens, hs)
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
        cands: list[Candidate] = []
        for r in range(len(rows)):
            # The card takes row r (it is below every end), then the turn's higher cards.
            ends, lens, hs, by_end = rule_rows(rows)
            pens = [0] * (nopp + 1)
            lay(ends, lens, hs, [card, *later], by_end.index(r), owner, pens)
            cands.append(((ends, lens, hs), 0, hand, pens))
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
        sample = self._draw(view)
        rollout = self.rollout
        score = _score
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
        else:
            # Only this seat's heads count: slot 1 its cards', slot 0 everyone else's.
            owner = [0] * (DECK_SIZE + 1)
            for c in hand:
                owner[c] = 1
        while used < budget and s < cap:
            opp = sample(unseen, need)
            if base is None:
                for j in alive:
                    (ends, lens, hs), first, rest, pre = cands[j]
                    pens = [0, pre[-1]]
                    rollout(ends[:], lens[:], hs[:], first, rest[:], opp, nopp, owner, pens, False)
                    vals[j].append(pens[1])
            else:
                for k, c in enumerate(opp):
                    owner[c] = k % nopp
                for c in hand:
                    owner[c] = nopp
                for j in alive:
                    (ends, lens, hs), first, rest, pre = cands[j]
                    pens = pre[:]
                    rollout(ends[:], lens[:], hs[:], first, rest[:], opp, nopp, owner, pens, True)
                    vals[j].append(score(base, pens, nopp, slots, weight))
            used += len(alive)
            s += 1
            if s % batch == 0:
                alive = self._prune(alive, vals, s)
                if len(alive) == 1:
                    break
                if deadline is not None and time.perf_counter() > deadline:
                    break
        return min(alive, key=lambda j: (sum(vals[j]), j))

    def _draw(self, view: View) -> Callable[[list[int], int], list[int]]:
        """What draws a sample of the unseen cards: ``rng.sample`` (a subclass may model it)."""
        return self.rng.sample

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
