"""The strongest built-in (``best``): ``montecarlo-v1``'s search with an opponent model.

``montecarlo-v1`` (``_montecarlo.py``) deals the unseen cards into the other hands at random
and lets the other seats play them in a random order.  Real opponents do not: they avoid a 6th
card and fill the snug gaps, and the cards they lay decide most of what this seat's cards take.
``BestBot`` keeps the same search (common random numbers, paired pruning, the match score near
66) and changes the sampled worlds: after the unseen cards are dealt, each other seat is, with
a probability learned for that seat, a greedy player: on every turn of the rollout
(``every_turn``; else only on the turn being decided) it plays the card of its sampled hand
that costs least on the rows as they are then.  The others keep their random order.

The probability comes from a small model of each seat: on a share ``a`` of its turns it plays
its greedy card, on the others a card at random (``FRACTIONS``: the values of ``a`` weighed).
Every turn seen is evidence for ``a``: the turns of finished rounds exactly (the round log
holds the hands), the turns of the round being played as a chance (``greedy_chance``: how
likely the card a seat just laid was the greedy one of a hand it might hold).  So a seat is
told apart from the first turns of the first round on, not only from the second round.

Which seats are modelled is drawn once per sample, so every candidate still meets the same
worlds.  Randomness comes only from ``self.rng`` (seeded in ``on_match_start``) and the sample
budget is fixed, so a match of built-ins is reproducible from its seeds; ``view.time_left``
only cuts sampling short as a safety cap.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._agent import MatchInfo
from .._view import View
from ..cards import ROW_LIMIT
from ..engine import ends_below, rule_rows
from ._montecarlo import MonteCarloBot, _rollout

# The shares of greedy turns a seat may have (``BestBot``'s model weighs each by the turns
# seen): random plays about 0.0, montecarlo-v1 about 0.25, safe about 0.7, greedy 1.0.  The
# top value is below 1 so that one odd card does not rule a greedy seat out.
FRACTIONS = (0.0, 0.2, 0.4, 0.6, 0.8, 0.97)
# How many expected 6th cards of evidence the prior ``avoid`` weighs in ``BestBot.avoid_odds``
# (a round is worth about 1.2 of them).
AVOID_WEIGHT = 2.0


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


def greedy_key(ends: list[int], lens: list[int], hs: list[int], c: int) -> int:
    """The cost of card ``c`` on the sorted rows that ``model_turn`` minimises (lower: greedier)."""
    i = ends_below(ends, c) - 1
    if i < 0:
        return min(hs) * 256 + 128 + c
    if lens[i] == ROW_LIMIT:
        return hs[i] * 256 + c - ends[i]
    return c - ends[i]


def greedy_chance(
    ends: list[int], lens: list[int], hs: list[int], card: int, pool: Sequence[int], m: int
) -> float:
    """The chance that ``card`` is the greedy card of a hand of it and ``m`` cards of ``pool``.

    The ``m`` other cards are a random draw from ``pool`` (the cards this seat has not seen):
    the chance is that of drawing them all among the cards that cost no less than ``card`` on
    the rows (a tie counts: the greedy player may pick either).  What the other seats hold is
    ignored, a small error that the model's noise share absorbs.
    """
    v = greedy_key(ends, lens, hs, card)
    worse = sum(1 for c in pool if c != card and greedy_key(ends, lens, hs, c) >= v)
    n = len(pool) - (card in pool)
    p = 1.0
    for i in range(m):
        if worse - i <= 0:
            return 0.0
        p *= (worse - i) / (n - i)
    return p


def turn_loglik(g: float, h: int) -> list[float]:
    """Per value ``a`` of ``FRACTIONS``, the log-likelihood of a card laid from ``h`` cards.

    ``g``: the chance that the card was the greedy one (1 or 0 when the hand is known).  A
    seat with share ``a`` lays it with chance ``a * g + (1 - a) / h``.
    """
    return [math.log(a * g + (1.0 - a) / h) for a in FRACTIONS]


def greedy_share(loglik: Sequence[float]) -> float:
    """The mean share of greedy turns over ``FRACTIONS``, given their summed log-likelihoods."""
    top = max(loglik)
    w = [math.exp(x - top) for x in loglik]
    return sum(a * x for a, x in zip(FRACTIONS, w, strict=True)) / sum(w)


def model_avoid(
    ends: list[int],
    lens: list[int],
    hs: list[int],
    opp: list[int],
    k: int,
    nopp: int,
    slots: Iterable[int],
) -> None:
    """Move the first card of each slot in ``slots`` that makes no 6th card to its turn at ``k``.

    ``opp`` as in ``model_turn``.  The slot's cards left are taken in their sampled (random)
    order and the first that either fits a row with room or is below every end is played; if
    every card would be a 6th one, the turn's card stays.  This is how ``montecarlo-v1`` seats
    look in the logs: about as random as ``random`` among the cards that take nothing, but
    laying a 6th card 2.5 times less often than a random card would.
    """
    below = ends_below
    full = ROW_LIMIT
    n = len(opp)
    for j in slots:
        here = k + j
        for q in range(here, n, nopp):
            i = below(ends, opp[q]) - 1
            if i < 0 or lens[i] < full:
                if q != here:
                    opp[here], opp[q] = opp[q], opp[here]
                break
    del hs  # the heads do not matter to this rule: the signature is model_turn's


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
    avoiding: list[int] | None = None,
) -> None:
    """``_montecarlo._rollout`` whose other seats in ``slots`` play greedily on every turn.

    Before each turn is laid, every modelled seat's greedy card among its cards left is moved
    into its place of the turn (``model_turn``), and every seat in ``avoiding`` plays its
    first card that makes no 6th card (``model_avoid``); ``opp`` itself is not changed (the
    candidates share it).  This seat's cards follow ``_rollout``'s policy, unchanged.
    """
    if not slots and not avoiding:
        _rollout(ends, lens, hs, mine, rest, opp, nopp, owner, pens, every)
        return
    if not avoiding:

        def greedy_seats(
            ends: list[int], lens: list[int], hs: list[int], opp: list[int], k: int
        ) -> None:
            model_turn(ends, lens, hs, opp, k, nopp, slots)

        _rollout(ends, lens, hs, mine, rest, opp[:], nopp, owner, pens, every, greedy_seats)
        return
    careful = avoiding

    def modelled_seats(
        ends: list[int], lens: list[int], hs: list[int], opp: list[int], k: int
    ) -> None:
        if slots:
            model_turn(ends, lens, hs, opp, k, nopp, slots)
        model_avoid(ends, lens, hs, opp, k, nopp, careful)

    _rollout(ends, lens, hs, mine, rest, opp[:], nopp, owner, pens, every, modelled_seats)


def greedy_turns(entry: dict[str, Any]) -> list[list[tuple[bool, int]]]:
    """Per seat, the turns of a round (its log entry): (was the card the greedy one, hand size).

    A seat's hand on each turn is its dealt hand less the cards it played before; the greedy
    card is ``model_turn``'s choice on the rows before the turn.  The last turn (one card
    left) is no evidence and is left out.
    """
    hands = [list(h) for h in entry["hands"]]
    rows = entry["rows"]
    out: list[list[tuple[bool, int]]] = [[] for _ in hands]
    for turn in entry["turns"]:
        ends, lens, hs, _ = rule_rows(rows)
        cards = turn["cards"]
        for s, hand in enumerate(hands):
            if len(hand) > 1:
                pick = hand[:]
                model_turn(ends, lens, hs, pick, 0, 1, (0,))
                out[s].append((pick[0] == cards[s], len(hand)))
            hand.remove(cards[s])
        rows = turn["rows"]
    return out


def greedy_rates(entry: dict[str, Any], agree: list[int], turns: list[int]) -> None:
    """Count, per seat, the turns of a round whose card was the greedy one (``greedy_turns``).

    ``agree[s]``/``turns[s]`` are added to.
    """
    for s, seen in enumerate(greedy_turns(entry)):
        turns[s] += len(seen)
        agree[s] += sum(g for g, _ in seen)


def makes_sixth(ends: list[int], lens: list[int], c: int) -> bool:
    """Whether card ``c`` would be the 6th card of its row on the sorted rows."""
    i = ends_below(ends, c) - 1
    return i >= 0 and lens[i] == ROW_LIMIT


def sixth_turns(entry: dict[str, Any]) -> list[list[tuple[bool, float]]]:
    """Per seat, the turns of a round: (was its card a 6th card, its hand's share of such cards).

    Over many turns, the first summed is about the second summed for a seat that plays at
    random, and less for one that avoids a 6th card.  Turns with one card left are left out.
    """
    hands = [list(h) for h in entry["hands"]]
    rows = entry["rows"]
    out: list[list[tuple[bool, float]]] = [[] for _ in hands]
    for turn in entry["turns"]:
        ends, lens, _, _ = rule_rows(rows)
        cards = turn["cards"]
        for s, hand in enumerate(hands):
            if len(hand) > 1:
                share = sum(makes_sixth(ends, lens, c) for c in hand) / len(hand)
                out[s].append((makes_sixth(ends, lens, cards[s]), share))
            hand.remove(cards[s])
        rows = turn["rows"]
    return out


class BestBot(MonteCarloBot):
    """``montecarlo-v1`` whose sampled opponents play greedily, as far as they are seen to.

    For each other seat the bot weighs the shares ``a`` of ``FRACTIONS`` by every turn of it
    seen in this match: after each round it replays the round's log (its ``on_round_end``
    entry: the deal and every turn) and knows which cards were greedy (``greedy_turns``); in
    the round being played, each ``play`` scores the cards laid on the turn before
    (``greedy_chance``, on the rows of that turn).  A seat whose mean share is ``a`` is
    modelled as greedy in a sample with probability ``cap * clip((a - lo) / (hi - lo), 0,
    1)``; ``prior`` is that probability before any turn of the seat is seen.  Measured mean
    shares: ``greedy`` near 0.97, ``safe`` about 0.7, ``montecarlo-v1`` about 0.25 (0.45 within
    the first round), ``random`` near 0; modelling a ``montecarlo-v1`` seat as greedy loses to
    it, so ``lo`` leaves such seats unmodelled (the search is then ``montecarlo-v1``'s).
    ``every_turn``: model every turn of the rollout (else only the turn of a ``play``).
    ``live``: learn from the round being played (else only from finished rounds).  The other
    parameters are ``MonteCarloBot``'s.
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
        lo: float = 0.5,
        hi: float = 0.9,
        prior: float = 0.0,
        every_turn: bool = True,
        live: bool = True,
        avoid: float = 0.0,
        learn_avoid: bool = False,
    ) -> None:
        super().__init__(samples, batch, z, max_factor, endgame, win_weight)
        self.cap, self.lo, self.hi, self.prior = cap, lo, hi, prior
        self.every_turn, self.live, self.avoid = every_turn, live, avoid
        self.learn_avoid = learn_avoid
        self._slots: list[int] = []  # the greedy slots of the current sample
        self._avoiding: list[int] = []  # its slots that avoid a 6th card (``model_avoid``)
        self._seat = 0
        self._agree: list[int] = []
        self._turns: list[int] = []
        # Per seat: summed log-likelihoods over FRACTIONS of the finished rounds, and of the
        # round being played (replaced by the exact ones at its end), with turn counts.
        self._past: list[list[float]] = []
        self._now: list[list[float]] = []
        self._now_turns: list[int] = []
        # Per seat: [6th cards laid, 6th cards a random player would have laid] (``sixth_turns``),
        # of the finished rounds and of the round being played.
        self._sixth_past: list[list[float]] = []
        self._sixth_now: list[list[float]] = []
        # (round, turn, rows, hand size) at this seat's last ``play``: the turn to score next.
        self._last: tuple[int, int, Any, int] | None = None

    def on_match_start(self, info: MatchInfo) -> None:
        super().on_match_start(info)
        n = info.n_players
        self._seat = info.seat
        self._agree = [0] * n
        self._turns = [0] * n
        self._past = [[0.0] * len(FRACTIONS) for _ in range(n)]
        self._sixth_past = [[0.0, 0.0] for _ in range(n)]
        self._forget_round(n)

    def _forget_round(self, n: int) -> None:
        self._now = [[0.0] * len(FRACTIONS) for _ in range(n)]
        self._now_turns = [0] * n
        self._sixth_now = [[0.0, 0.0] for _ in range(n)]
        self._last = None

    def on_round_end(self, result: dict[str, Any]) -> None:
        n = len(self._past)
        try:
            seen = greedy_turns(result)
            sixth = sixth_turns(result)
            if len(seen) != n:
                raise ValueError("not this match's seats")
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            return  # not a round entry this bot can read: it keeps what it saw in the round
        for s, turns in enumerate(seen):
            self._turns[s] += len(turns)
            self._agree[s] += sum(g for g, _ in turns)
            acc = self._past[s]
            for g, h in turns:
                for k, x in enumerate(turn_loglik(1.0 if g else 0.0, h)):
                    acc[k] += x
            tally = self._sixth_past[s]
            for laid, share in sixth[s]:
                tally[0] += laid
                tally[1] += share
        self._forget_round(n)

    def play(self, view: View) -> int:
        if self.live:
            self._observe(view)
        return super().play(view)

    def _observe(self, view: View) -> None:
        """Score the cards the other seats laid on the turn before this one (``greedy_chance``).

        The rows of that turn are the ones this seat saw at its ``play`` then; a seat's hand
        then was the card it laid and as many unseen cards as this seat holds now.
        """
        n = view.n_players
        if len(self._now) != n:
            return  # not started by ``on_match_start``: nothing to learn into
        last = self._last
        rnd, turn = view.round, view.turn
        if last is not None and last[0] != rnd:
            self._forget_round(n)  # a round whose end this bot did not see
            last = None
        self._last = (rnd, turn, view.rows, len(view.hand))
        if last is None or last[1] != turn - 1 or len(view.revealed) < turn:
            return
        _, t, rows, h = last
        cards = view.revealed[t]
        ends, lens, hs, _ = rule_rows(rows)
        pool = view.unseen()
        # The share of 6th cards among the cards a seat might have held (the pool and its card).
        sixths = sum(makes_sixth(ends, lens, c) for c in pool)
        for s in range(n):
            if s != self._seat and h > 1:
                g = greedy_chance(ends, lens, hs, cards[s], pool, h - 1)
                acc = self._now[s]
                for k, x in enumerate(turn_loglik(g, h)):
                    acc[k] += x
                self._now_turns[s] += 1
                laid = makes_sixth(ends, lens, cards[s])
                tally = self._sixth_now[s]
                tally[0] += laid
                tally[1] += (sixths + laid) / (len(pool) + 1)

    def greedy_counts(self) -> list[tuple[int, int]]:
        """Per seat, (greedy turns, counted turns) in the rounds of this match seen so far."""
        return list(zip(self._agree, self._turns, strict=True))

    def greedy_shares(self) -> list[float | None]:
        """Per seat, the mean share of greedy turns from every turn seen (None: none seen)."""
        out: list[float | None] = []
        for s in range(len(self._past)):
            if self._turns[s] + self._now_turns[s] == 0:
                out.append(None)
                continue
            out.append(
                greedy_share([a + b for a, b in zip(self._past[s], self._now[s], strict=True)])
            )
        return out

    def model_odds(self, n_players: int) -> list[float]:
        """Per slot (the other seats in seat order), the chance to model it as greedy."""
        shares = self.greedy_shares()
        out = []
        for seat in range(n_players):
            if seat == self._seat:
                continue
            a = shares[seat] if seat < len(shares) else None
            if a is None:
                out.append(self.prior)
                continue
            out.append(self.cap * min(1.0, max(0.0, (a - self.lo) / (self.hi - self.lo))))
        return out

    def _draw(self, view: View) -> Callable[[list[int], int], list[int]]:
        """``rng.sample``, then how each other seat plays in this sample (and this turn's cards).

        A slot is greedy with its ``model_odds``; else, with ``every_turn``, it avoids a 6th
        card with ``avoid_odds`` (``model_avoid``), else it plays its random order.  Without
        ``every_turn`` only a card to play is modelled, and only greedily: in ``take_row``
        this turn's cards are known already.
        """
        draw = self.rng.sample
        self._slots = []
        self._avoiding = []
        n = view.n_players
        greedy = self.model_odds(n)
        careful = self.avoid_odds(n) if self.every_turn else [0.0] * len(greedy)
        odds = [
            (j, q, q + (1.0 - q) * p)
            for j, (q, p) in enumerate(zip(greedy, careful, strict=True))
            if q > 0.0 or p > 0.0
        ]
        if not odds or (not self.every_turn and view.card is not None):
            return draw
        nopp = n - 1
        rnd = self.rng.random
        first: tuple[list[int], list[int], list[int]] | None = None
        if not self.every_turn:
            ends, lens, hs, _ = rule_rows(view.rows)
            first = (ends, lens, hs)

        def sample(population: list[int], k: int) -> list[int]:
            opp = draw(population, k)
            slots: list[int] = []
            avoiding: list[int] = []
            for j, q, qa in odds:
                u = rnd()
                if u < q:
                    slots.append(j)
                elif u < qa:
                    avoiding.append(j)
            if first is None:
                # Read by ``rollout`` for every candidate.
                self._slots, self._avoiding = slots, avoiding
            else:
                model_turn(*first, opp, 0, nopp, slots)
            return opp

        return sample

    def avoid_odds(self, n_players: int) -> list[float]:
        """Per slot, the chance that a seat not modelled as greedy avoids a 6th card.

        ``avoid`` for every seat; with ``learn_avoid`` it is the prior of an estimate per seat:
        one less the ratio of the 6th cards it laid to those a random player would have laid
        (``sixth_turns``), with ``AVOID_WEIGHT`` expected 6th cards' worth of the prior mixed in.
        """
        out = []
        for seat in range(n_players):
            if seat == self._seat:
                continue
            if not self.learn_avoid or seat >= len(self._sixth_past):
                out.append(self.avoid)
                continue
            laid = self._sixth_past[seat][0] + self._sixth_now[seat][0]
            expected = self._sixth_past[seat][1] + self._sixth_now[seat][1]
            w = AVOID_WEIGHT
            ratio = (laid + w * (1.0 - self.avoid)) / (expected + w)
            out.append(min(1.0, max(0.0, 1.0 - ratio)))
        return out

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
        rollout_modelled(
            ends, lens, hs, mine, rest, opp, nopp, owner, pens, every, self._slots, self._avoiding
        )
