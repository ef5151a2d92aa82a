"""The strongest built-in (``best``): ``montecarlo-v1``'s search with an opponent model.

``montecarlo-v1`` (``_montecarlo.py``) deals the unseen cards into the other hands at random
and lets the other seats play them in a random order.  Real opponents do not: they avoid a 6th
card and fill the snug gaps, and the cards they lay decide most of what this seat's cards take.
``BestBot`` keeps the same search (common random numbers, paired pruning, the match score near
66) and changes the sampled worlds in two ways, and how many it draws:

* Who plays greedily.  Each other seat is, in a sample, with a probability learned for that
  seat, a greedy player: on every turn of the rollout it plays the card of its sampled hand
  that costs least on the rows as they are then (``greedy_key``, ``builtin:greedy``'s order).
  The others play their sampled cards in a random order, as in ``montecarlo-v1``.
* What a greedy seat holds.  A greedy seat that laid card ``p`` on a turn held no card that
  was greedier than ``p`` on that turn's rows, and the cards it holds now were all in its hand
  then.  So, in a sample where a seat is modelled greedy, its hand is drawn only from the
  unseen cards that are no greedier than each card it laid this round (``excluded_cards``);
  the cards it cannot hold go to the other hands or to the unused rest of the deck.  Without
  this the sampled greedy seats hold the snug cards they would already have played, and the
  search expects them to fill gaps they cannot fill.  Against three ``greedy`` this took the
  heads per deal from 8.5 to 6.8 on the same 60 seeds (docs/builtins.md).
* How many worlds.  ``montecarlo-v1`` draws 200 per candidate on every turn; ``best`` draws
  more early in a round, where a decision weighs on every later turn, and fewer near its end
  (``SAMPLES``): as strong, and the median decision a third cheaper.

The probability comes from a small model of each seat: on a share ``a`` of its turns it plays
its greedy card, on the others a card at random (``FRACTIONS``: the values of ``a`` weighed).
Every turn seen is evidence for ``a``: the turns of finished rounds exactly (the round log
holds the hands), the turns of the round being played as a chance (``greedy_chance``: how
likely the card a seat just laid was the greedy one of a hand it might hold).  So a seat is
told apart from the first turns of the first round on, not only from the second round.
Modelling a seat that is not greedy (``montecarlo-v1``) as greedy loses to it, so such seats
keep ``montecarlo-v1``'s random model, and against a field of them ``best`` searches as
``montecarlo-v1`` does.

The rollout (``play_out``) is written for this model: the greedy seats' hands are kept sorted,
so each seat's greedy card is found among at most five cards (the lowest card after each row
end), which makes a modelled rollout about as cheap as ``montecarlo-v1``'s.  Which seats are
modelled, and their hands, are drawn once per sample, so every candidate still meets the same
worlds.  Randomness comes only from ``self.rng`` (seeded in ``on_match_start``) and the sample
budget is fixed, so a match of built-ins is reproducible from its seeds; ``view.time_left``
only cuts sampling short as a safety cap.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from .._agent import MatchInfo
from .._view import View
from ..cards import DECK_SIZE, N_ROWS, ROW_LIMIT
from ..engine import cheapest, ends_below, lay, rule_rows
from ._montecarlo import Candidate, MonteCarloBot, _score

# The shares of greedy turns a seat may have (``BestBot``'s model weighs each by the turns
# seen): random plays about 0.0, montecarlo-v1 about 0.25, safe about 0.7, greedy 1.0.  The
# top value is below 1 so that one odd card does not rule a greedy seat out.
FRACTIONS = (0.0, 0.2, 0.4, 0.6, 0.8, 0.97)

# The samples per candidate by hand size (``BestBot``'s default budget): more where a round is
# young and a decision weighs on every later turn, fewer near its end, where fewer cards are
# left to play out and the candidates part sooner.  Measured against three ``greedy`` (60
# matches): as strong as 200 samples at every size, with the median decision a third cheaper.
SAMPLES = {10: 250, 9: 250, 8: 200, 7: 170, 6: 120, 5: 100, 4: 90, 3: 80, 2: 60}

# A sampled world: the cards of the seats that play in a random order (``nfree`` a turn, slot
# ``free_slots[q % nfree]`` owns ``free[q]``), the sorted hands of the greedy seats (slot
# ``greedy_slots[i]`` owns ``hands[i]``).
World = tuple[list[int], int, list[list[int]], list[int], list[int]]


def greedy_key(ends: list[int], lens: list[int], hs: list[int], c: int) -> int:
    """The cost of card ``c`` on the sorted rows as ``builtin:greedy`` ranks it (lower first).

    A fit that makes no 6th card costs its gap to the row end; a card below every end the
    cheapest row's heads (after the fits, the lower card first); a 6th card the row's heads
    (before a card below every end that takes as many), the snugger first.
    """
    i = ends_below(ends, c) - 1
    if i < 0:
        return min(hs) * 256 + 128 + c
    if lens[i] == ROW_LIMIT:
        return hs[i] * 256 + c - ends[i]
    return c - ends[i]


def greedy_card(ends: list[int], lens: list[int], hs: list[int], hand: Sequence[int]) -> int:
    """The card ``builtin:greedy`` plays from ``hand`` on the sorted rows (ties: the lower)."""
    return min(hand, key=lambda c: (greedy_key(ends, lens, hs, c), c))


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


def greedy_turns(entry: dict[str, Any]) -> list[list[tuple[bool, int]]]:
    """Per seat, the turns of a round (its log entry): (was the card the greedy one, hand size).

    A seat's hand on each turn is its dealt hand less the cards it played before; the greedy
    card is ``greedy_card``'s on the rows before the turn.  The last turn (one card left) is
    no evidence and is left out.
    """
    hands = [list(h) for h in entry["hands"]]
    rows = entry["rows"]
    out: list[list[tuple[bool, int]]] = [[] for _ in hands]
    for turn in entry["turns"]:
        ends, lens, hs, _ = rule_rows(rows)
        cards = turn["cards"]
        for s, hand in enumerate(hands):
            if len(hand) > 1:
                out[s].append((greedy_card(ends, lens, hs, hand) == cards[s], len(hand)))
            hand.remove(cards[s])
        rows = turn["rows"]
    return out


def excluded_cards(rows: Sequence[Sequence[int]], card: int) -> list[int]:
    """The cards a greedy player that laid ``card`` on ``rows`` cannot have held then.

    Those that cost strictly less than ``card`` by ``greedy_key`` (with a tie it might have
    held the other card: the tie-break is left out, so one rule serves a seat that is greedy
    only in a share of its turns too).
    """
    ends, lens, hs, _ = rule_rows(rows)
    v = greedy_key(ends, lens, hs, card)
    return [c for c in range(1, DECK_SIZE + 1) if greedy_key(ends, lens, hs, c) < v]


def play_out(
    ends: list[int],
    lens: list[int],
    hs: list[int],
    mine: int,
    rest: list[int],
    free: list[int],
    nfree: int,
    hands: list[list[int]],
    owner: list[int],
    pens: list[int],
    every: bool,
) -> None:
    """Play ``mine`` now (0: let the policy choose) and ``rest`` later, to the round's end.

    ``_montecarlo._rollout`` with greedy seats: ``ends``/``lens``/``hs`` (sorted rows),
    ``rest`` and the sorted ``hands`` of the greedy seats are consumed.  ``free`` holds the
    cards of the other seats, ``nfree`` a turn, in play order.  Before each turn every greedy
    seat picks its card (``greedy_key``, the lower on a tie: ``builtin:greedy``'s choice).
    Each turn is placed by the rule (``engine.lay``); a card below every end takes the
    cheapest row.  The heads each card takes are added to ``pens[owner[card]]``.  ``every``:
    every seat's heads count (the end of the match), not only this seat's.  This seat's later
    cards follow ``_rollout``'s greedy rule.
    """
    k = 0
    below = ends_below
    full = ROW_LIMIT
    last = N_ROWS - 1
    top = DECK_SIZE + 1
    while True:
        if not mine:
            if len(rest) == 1:
                mine = rest.pop()
            else:
                # _rollout's policy: cost * 128 + gap; a card below every end costs the
                # cheapest row plus half a head, so a free fit is preferred to a 0-head take.
                bk = 1 << 30
                after = 0
                for c in rest:
                    if c < after:
                        # Up to the next end, the cards go where the card before went, with
                        # larger gaps: none of them can be better (a tie keeps the lower).
                        continue
                    i = below(ends, c) - 1
                    after = ends[i + 1] if i < last else top
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
        cards = free[k : k + nfree]
        for hand in hands:
            # The greedy card: greedy_key on the sorted hand, where only the first card after
            # each end can be the best of its row (the same skip as above).
            bk = 1 << 30
            pick = 0
            after = 0
            for c in hand:
                if c < after:
                    continue
                i = below(ends, c) - 1
                after = ends[i + 1] if i < last else top
                if i < 0:
                    v = min(hs) * 256 + 128 + c
                elif lens[i] == full:
                    v = hs[i] * 256 + c - ends[i]
                else:
                    v = c - ends[i]
                if v < bk:
                    bk = v
                    pick = c
            hand.remove(pick)
            cards.append(pick)
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
        k += nfree
        mine = 0


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
    ``live``: learn from the round being played (else only from finished rounds).  ``infer``:
    draw a greedy seat's hand only from the cards it can hold (``excluded_cards``).
    ``samples``: the samples per candidate, or per hand size (a mapping; a size it lacks takes
    the next smaller size's; default ``SAMPLES``).  The other parameters are ``MonteCarloBot``'s.
    """

    name = "builtin:best"
    # One rollout of ``_search`` (an attribute, so a test can count them).
    play_out = staticmethod(play_out)

    def __init__(
        self,
        samples: int | dict[int, int] | None = None,
        batch: int = 16,
        z: float = 2.5,
        max_factor: float = 3.0,
        endgame: int | None = 36,
        win_weight: float = 40.0,
        cap: float = 1.0,
        lo: float = 0.5,
        hi: float = 0.9,
        prior: float = 0.0,
        live: bool = True,
        infer: bool = True,
    ) -> None:
        if samples is None:
            samples = SAMPLES
        flat = samples if isinstance(samples, int) else max(samples.values())
        super().__init__(flat, batch, z, max_factor, endgame, win_weight)
        self.schedule = dict(samples) if isinstance(samples, dict) else {}
        self.cap, self.lo, self.hi, self.prior = cap, lo, hi, prior
        self.live, self.infer = live, infer
        self._seat = 0
        self._agree: list[int] = []
        self._turns: list[int] = []
        # Per seat: summed log-likelihoods over FRACTIONS of the finished rounds, and of the
        # round being played (replaced by the exact ones at its end), with turn counts.
        self._past: list[list[float]] = []
        self._now: list[list[float]] = []
        self._now_turns: list[int] = []
        # (round, turn, rows, hand size) at this seat's last ``play``: the turn to score next.
        self._last: tuple[int, int, Any, int] | None = None
        # The round being played: the rows this seat saw at its ``play`` of each turn, and per
        # seat the cards it cannot hold if it is greedy, from the first ``_done`` turns.
        self._round = -1
        self._rows_at: dict[int, Any] = {}
        self._excluded: list[set[int]] = []
        self._done = 0

    def on_match_start(self, info: MatchInfo) -> None:
        super().on_match_start(info)
        n = info.n_players
        self._seat = info.seat
        self._agree = [0] * n
        self._turns = [0] * n
        self._past = [[0.0] * len(FRACTIONS) for _ in range(n)]
        self._forget_round(n)

    def _forget_round(self, n: int) -> None:
        self._now = [[0.0] * len(FRACTIONS) for _ in range(n)]
        self._now_turns = [0] * n
        self._last = None
        self._round = -1
        self._rows_at = {}
        self._excluded = [set() for _ in range(n)]
        self._done = 0

    def on_round_end(self, result: dict[str, Any]) -> None:
        n = len(self._past)
        try:
            seen = greedy_turns(result)
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
        self._forget_round(n)

    def play(self, view: View) -> int:
        if self.live:
            self._observe(view)
        if len(self._excluded) == view.n_players:
            if view.round != self._round:
                # A new round (or one whose end this bot did not see): its own rows.
                self._round = view.round
                self._rows_at = {}
                self._excluded = [set() for _ in range(view.n_players)]
                self._done = 0
            self._rows_at[view.turn] = view.rows
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
            self._now = [[0.0] * len(FRACTIONS) for _ in range(n)]
            self._now_turns = [0] * n
            last = None
        self._last = (rnd, turn, view.rows, len(view.hand))
        if last is None or last[1] != turn - 1 or len(view.revealed) < turn:
            return
        _, t, rows, h = last
        cards = view.revealed[t]
        ends, lens, hs, _ = rule_rows(rows)
        pool = view.unseen()
        for s in range(n):
            if s != self._seat and h > 1:
                g = greedy_chance(ends, lens, hs, cards[s], pool, h - 1)
                acc = self._now[s]
                for k, x in enumerate(turn_loglik(g, h)):
                    acc[k] += x
                self._now_turns[s] += 1

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

    def excluded(self, view: View) -> list[set[int]]:
        """Per seat, the cards it cannot hold if it plays greedily (``excluded_cards``).

        From every turn of this round whose rows this seat saw at its ``play`` and whose cards
        are known: the turns revealed, and in ``take_row`` the turn being resolved.
        """
        out = self._excluded
        if len(out) != view.n_players or view.round != self._round:
            return [set() for _ in range(view.n_players)]
        turns = list(view.revealed)
        if view.current is not None and len(turns) == view.turn:
            turns.append(view.current)
        me = self._seat
        for t in range(self._done, len(turns)):
            rows = self._rows_at.get(t)
            if rows is None:
                continue
            for s, card in enumerate(turns[t]):
                if s != me:
                    out[s].update(excluded_cards(rows, card))
        self._done = max(self._done, len(turns))
        return out

    def _samples(self, h: int) -> int:
        """The samples per candidate for a decision with ``h`` cards in hand."""
        schedule = self.schedule
        if not schedule:
            return self.samples
        # A size the schedule lacks: the largest size below it (else its smallest size).
        fit = [k for k in schedule if k <= h]
        return schedule[max(fit) if fit else min(schedule)]

    def _worlds(self, view: View, unseen: list[int], h: int) -> Callable[[], World]:
        """What draws a sampled world (``World``) for a decision with ``h`` cards a hand.

        A slot is greedy with its ``model_odds`` (drawn per sample, so every candidate meets
        the same world); a greedy slot's hand is drawn from the unseen cards it can hold
        (``excluded``), then topped up from the rest if they are too few; the other slots
        share the rest, in a random order.
        """
        rng = self.rng
        sample = rng.sample
        nopp = view.n_players - 1
        odds = self.model_odds(view.n_players)
        every = list(range(nopp))
        if not any(odds):
            need = nopp * h

            def plain() -> World:
                return sample(unseen, need), nopp, [], every, []

            return plain
        rnd = rng.random
        me = self._seat
        banned = self.excluded(view) if self.infer else []
        modelled: list[tuple[int, float, list[int] | None]] = []
        for j, q in enumerate(odds):
            if q > 0.0:
                bad = banned[j if j < me else j + 1] if banned else set()
                modelled.append((j, q, [c for c in unseen if c not in bad] if bad else None))

        def world() -> World:
            greedy: list[int] = []
            hands: list[list[int]] = []
            taken: set[int] = set()
            for j, q, ok in modelled:
                if rnd() < q:
                    greedy.append(j)
                    if ok is None:
                        hands.append([])
                        continue
                    avail = [c for c in ok if c not in taken] if taken else ok
                    g = sample(avail, h) if len(avail) > h else avail[:]
                    taken.update(g)
                    hands.append(g)
            free = [j for j in every if j not in greedy] if greedy else every
            pool = [c for c in unseen if c not in taken] if taken else unseen
            nfree = len(free)
            cut = nfree * h
            drawn = sample(pool, cut + sum(h - len(g) for g in hands))
            p = cut
            for g in hands:
                m = h - len(g)
                if m:
                    g += drawn[p : p + m]
                    p += m
                g.sort()
            return drawn[:cut], nfree, hands, free, greedy

        return world

    def _search(self, view: View, cands: list[Candidate], h: int, base: list[int] | None) -> int:
        """``MonteCarloBot._search`` on ``_worlds``' samples, played out by ``play_out``."""
        n = len(cands)
        hand = view.hand
        nopp = view.n_players - 1
        world = self._worlds(view, view.unseen(), h)
        run = self.play_out
        score = _score
        deadline = self._deadline(view)
        vals: list[list[float]] = [[] for _ in range(n)]
        alive = list(range(n))
        samples = self._samples(h)
        budget = samples * n
        cap = int(samples * self.max_factor)
        batch = self.batch
        used = 0
        s = 0
        every = base is not None  # every seat's heads count (near 66), or only this seat's
        totals = base if base is not None else []
        slots = range(nopp)
        weight = self.win_weight
        if not every:
            # Only this seat's heads count: slot 1 its cards', slot 0 everyone else's.
            owner = [0] * (DECK_SIZE + 1)
            for c in hand:
                owner[c] = 1
        else:
            owner = [nopp] * (DECK_SIZE + 1)
        while used < budget and s < cap:
            free, nfree, hands, free_slots, greedy_slots = world()
            if every:
                for q, c in enumerate(free):
                    owner[c] = free_slots[q % nfree]
                for g, slot in zip(hands, greedy_slots, strict=True):
                    for c in g:
                        owner[c] = slot
                for c in hand:
                    owner[c] = nopp
            for j in alive:
                (ends, lens, hs), first, rest, pre = cands[j]
                pens = pre[:] if every else [0, pre[-1]]
                run(
                    ends[:],
                    lens[:],
                    hs[:],
                    first,
                    rest[:],
                    free,
                    nfree,
                    [g[:] for g in hands],
                    owner,
                    pens,
                    every,
                )
                vals[j].append(score(totals, pens, nopp, slots, weight) if every else pens[1])
            used += len(alive)
            s += 1
            if s % batch == 0:
                alive = self._prune(alive, vals, s)
                if len(alive) == 1:
                    break
                if deadline is not None and time.perf_counter() > deadline:
                    break
        return min(alive, key=lambda j: (sum(vals[j]), j))
