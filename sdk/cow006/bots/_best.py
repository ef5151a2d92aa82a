"""The strongest built-in (``best``): ``montecarlo-v1``'s search with an opponent model.

``montecarlo-v1`` (``_montecarlo.py``) deals the unseen cards into the other hands at random
and lets the other seats play them in a random order.  Real opponents do not: they avoid a 6th
card and fill the snug gaps, and the cards they lay decide most of what this seat's cards take.
``BestBot`` keeps the same search (common random numbers, paired pruning, the match score near
66) and changes the sampled worlds: after the unseen cards are dealt, each other seat is, with
probability ``1 - eps`` per sample, a greedy player: on every turn of the rollout
(``every_turn``; else only on the turn being decided) it plays the card of its sampled hand
that costs least on the rows as they are then.  The others keep their random order.

Which seats are modelled is drawn once per sample, so every candidate still meets the same
worlds.  Randomness comes only from ``self.rng`` (seeded in ``on_match_start``) and the sample
budget is fixed, so a match of built-ins is reproducible from its seeds; ``view.time_left``
only cuts sampling short as a safety cap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .._agent import MatchInfo
from .._view import View
from ..cards import ROW_LIMIT
from ..engine import ends_below, rule_rows
from ._montecarlo import MonteCarloBot, _rollout

# Below this many counted turns of a seat, its rate is not trusted yet: ``prior`` is used.
MIN_TURNS = 9


def model_turn(
    ends: list[int],
    lens: list[int],
    hs: list[int],
    opp: list[int],
    k: int,
    nopp: int,
    slots: Iterable[int],
) -> None:
    """Move the greedy card of each seat slot in ``slots`` to its place of the turn at ``k``.

    ``opp`` is a sample as the rollout reads it: the card at index ``q`` belongs to slot
    ``q % nopp`` and is played on turn ``q // nopp``; the turn being modelled starts at index
    ``k``.  For slot ``j`` the card chosen among ``opp[k + j::nopp]`` (its cards left) is the
    one that costs least on the rows ``ends``/``lens``/``hs`` (sorted by end) as if it were
    alone: a fit that makes no 6th card, the snuggest gap first; then a card below every end
    (the lowest such card); then a 6th card (the fewest heads, the snuggest).  It swaps places
    with ``opp[k + j]``; nothing else moves, so every card keeps its owner.
    """
    below = ends_below
    full = ROW_LIMIT
    low = min(hs)
    n = len(opp)
    for j in slots:
        here = k + j
        best = here
        bk = 1 << 30
        for q in range(here, n, nopp):
            c = opp[q]
            i = below(ends, c) - 1
            if i < 0:
                v = low * 256 + 128 + c
            elif lens[i] == full:
                v = hs[i] * 256 + c - ends[i]
            else:
                v = c - ends[i]
            if v < bk:
                bk = v
                best = q
        if best != here:
            opp[here], opp[best] = opp[best], opp[here]


def rollout_modelled(
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
    slots: list[int],
) -> None:
    """``_montecarlo._rollout`` whose other seats in ``slots`` play greedily on every turn.

    Before each turn is laid, every modelled seat's greedy card among its cards left is moved
    into its place of the turn (``model_turn``); ``opp`` itself is not changed (the candidates
    share it).  This seat's cards follow ``_rollout``'s policy, unchanged.
    """
    if not slots:
        _rollout(ends, lens, hs, mine, rest, opp, nopp, owner, pens, every)
        return

    def greedy_seats(
        ends: list[int], lens: list[int], hs: list[int], opp: list[int], k: int
    ) -> None:
        model_turn(ends, lens, hs, opp, k, nopp, slots)

    _rollout(ends, lens, hs, mine, rest, opp[:], nopp, owner, pens, every, greedy_seats)


def greedy_rates(entry: dict[str, Any], agree: list[int], turns: list[int]) -> None:
    """Count, per seat, the turns of a round (its log entry) whose card was the greedy one.

    A seat's hand on each turn is its dealt hand less the cards it played before; the greedy
    card is ``model_turn``'s choice on the rows before the turn.  The last turn (one card
    left) is no evidence and is not counted.  ``agree[s]``/``turns[s]`` are added to.
    """
    hands = [list(h) for h in entry["hands"]]
    rows = entry["rows"]
    for turn in entry["turns"]:
        ends, lens, hs, _ = rule_rows(rows)
        cards = turn["cards"]
        for s, hand in enumerate(hands):
            if len(hand) > 1:
                pick = hand[:]
                model_turn(ends, lens, hs, pick, 0, 1, (0,))
                turns[s] += 1
                agree[s] += pick[0] == cards[s]
            hand.remove(cards[s])
        rows = turn["rows"]


class BestBot(MonteCarloBot):
    """``montecarlo-v1`` whose sampled opponents play greedily, as far as they are seen to.

    After each round the bot replays the round's log (its ``on_round_end`` entry: the deal and
    every turn) and counts, for each other seat, how often the card it played was the greedy
    card of its hand (``greedy_rates``).  A seat with rate ``r`` is modelled as greedy in a
    sample with probability ``cap * clip((r - lo) / (hi - lo), 0, 1)``; ``prior`` is that
    probability before a seat has ``MIN_TURNS`` counted turns.  Measured rates: ``greedy``
    1.0, ``safe`` about 0.75, ``montecarlo-v1`` about 0.4, ``random`` about 0.2; modelling a
    ``montecarlo-v1`` seat as greedy loses to it, so ``lo`` leaves such seats unmodelled (the
    search is then ``montecarlo-v1``'s).  ``every_turn``: model every turn of the rollout (else
    only the turn of a ``play``).  The other parameters are ``MonteCarloBot``'s.
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
        cap: float = 0.9,
        lo: float = 0.6,
        hi: float = 0.95,
        prior: float = 0.0,
        every_turn: bool = True,
    ) -> None:
        super().__init__(samples, batch, z, max_factor, endgame, win_weight)
        self.cap, self.lo, self.hi, self.prior = cap, lo, hi, prior
        self.every_turn = every_turn
        self._slots: list[int] = []  # the modelled slots of the current sample
        self._seat = 0
        self._agree: list[int] = []
        self._turns: list[int] = []

    def on_match_start(self, info: MatchInfo) -> None:
        super().on_match_start(info)
        self._seat = info.seat
        self._agree = [0] * info.n_players
        self._turns = [0] * info.n_players

    def on_round_end(self, result: dict[str, Any]) -> None:
        agree, turns = self._agree[:], self._turns[:]
        try:
            greedy_rates(result, agree, turns)
        except (KeyError, IndexError, TypeError, ValueError):
            return  # not a round entry this bot can read: it learns nothing from it
        self._agree, self._turns = agree, turns

    def greedy_counts(self) -> list[tuple[int, int]]:
        """Per seat, (greedy turns, counted turns) in the rounds of this match seen so far."""
        return list(zip(self._agree, self._turns, strict=True))

    def model_odds(self, n_players: int) -> list[float]:
        """Per slot (the other seats in seat order), the chance to model it as greedy."""
        out = []
        for seat in range(n_players):
            if seat == self._seat:
                continue
            t = self._turns[seat] if seat < len(self._turns) else 0
            if t < MIN_TURNS:
                out.append(self.prior)
                continue
            r = self._agree[seat] / t
            out.append(self.cap * min(1.0, max(0.0, (r - self.lo) / (self.hi - self.lo))))
        return out

    def _draw(self, view: View) -> Callable[[list[int], int], list[int]]:
        """``rng.sample``, then which seats are greedy in this sample (and this turn's cards).

        Without ``every_turn`` only a card to play is modelled: in ``take_row`` this turn's
        cards are known already.
        """
        draw = self.rng.sample
        self._slots = []
        odds = [(j, q) for j, q in enumerate(self.model_odds(view.n_players)) if q > 0.0]
        if not odds or (not self.every_turn and view.card is not None):
            return draw
        nopp = view.n_players - 1
        rnd = self.rng.random
        first: tuple[list[int], list[int], list[int]] | None = None
        if not self.every_turn:
            ends, lens, hs, _ = rule_rows(view.rows)
            first = (ends, lens, hs)

        def sample(population: list[int], k: int) -> list[int]:
            opp = draw(population, k)
            slots = [j for j, q in odds if rnd() < q]
            if first is None:
                self._slots = slots  # read by ``rollout`` for every candidate
            else:
                model_turn(*first, opp, 0, nopp, slots)
            return opp

        return sample

    def rollout(
        self,
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
    ) -> None:
        """One rollout of the search (``MonteCarloBot._search`` calls it per candidate)."""
        rollout_modelled(ends, lens, hs, mine, rest, opp, nopp, owner, pens, every, self._slots)
