"""The pure rules of Корова 006: deal, simultaneous reveal, ordered resolution, scoring.

No I/O and no global random state: randomness comes in as a ``random.Random`` (or an explicit
deal), decisions come in as arguments, and every transition returns the events it produced, so
the match log falls out of the transitions.  The only callback is ``choose_row``, asked at the
moment a card lower than every row end is resolved, after the lower cards of the same turn.

The placement rule is written once, in ``lay``, on the rows as the rule reads them: their
last cards in ascending order (``ends``), with the lengths and the heads of those rows.  Only
the last card of a row decides where a card goes (``ends_below``), and a card only ever
replaces the end just below it, so the order of the ends is kept; only a take by a card below
every end makes that row the first.  The engine, the views' helpers, the built-in bots'
simulations and the replay (``cow006.replay``) all place cards through ``lay``: a match
places one card at a time, a simulation a whole turn in one call.

Every public transition checks what it is given (``SetupError``, ``CardNotInHandError``,
``InvalidRowError``).  A caller that has checked each decision itself (the runner, which has
to replace a bad card by a fallback anyway) pays nothing extra: the checks are the cheap ones
the transitions need to do their work, a round dealt by ``deal_round`` needs none, and the
cards of a turn the caller has checked (``play_turn(..., checked=True)``) are not checked
again.
"""

from __future__ import annotations

import itertools

# ``_bisect`` is what ``bisect`` re-exports; the bot side imports no more than it needs.
from _bisect import bisect_left

from ._errors import CardNotInHandError, InvalidRowError, SetupError
from .cards import (
    DECK_SIZE,
    END_SCORE,
    HAND_SIZE,
    HEADS,
    MAX_PLAYERS,
    MIN_PLAYERS,
    N_ROWS,
    ROW_LIMIT,
    heads_of,
)

# Names for the type checker only: the typed records live with the log, which a bot process
# never imports, and a bot process imports neither ``typing`` nor ``collections``.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from .log import Take

    # choose_row(seat, card) -> row index; asked only for a card below every row end.  None:
    # every seat takes the cheapest row (``State.cheapest_row``, what ``Agent.take_row`` and
    # the fallback take), and no one is asked.
    ChooseRow = Callable[[int, int], Any] | None


class State:
    """Everything about a match in progress, as plain data.

    ``rows`` are the four rows (row index 0..3, oldest card first); ``hands`` the cards still
    held per seat; ``piles`` the cards taken this round per seat; ``penalties`` the heads taken
    this round per seat; ``scores`` the totals of the finished rounds; ``revealed`` the cards of
    each resolved turn of this round, by seat.  ``round`` counts from 0 and ``turn`` is the index
    of the next turn to play in the round (0..10).

    ``ends``, ``sizes``, ``heads`` and ``by_end`` are the rows as the placement rule reads them
    (see the module): the last cards in ascending order, and the lengths, heads and indices of
    those rows, so ``ends[p] == rows[by_end[p]][-1]``.  (A plain class, not a dataclass: bot
    processes import the engine, and ``dataclasses`` costs them ~10 ms of start-up.)
    """

    __slots__ = (
        "by_end",
        "ends",
        "hands",
        "heads",
        "n_players",
        "penalties",
        "piles",
        "revealed",
        "round",
        "rows",
        "scores",
        "sizes",
        "turn",
    )

    def __init__(self, n_players: int, scores: list[int]) -> None:
        self.n_players = n_players
        self.scores = scores
        self.round = -1
        # turn = HAND_SIZE marks "between rounds", so starting a round is the next legal step.
        self.turn = HAND_SIZE
        self.rows: list[list[int]] = []
        self.hands: list[list[int]] = []
        self.piles: list[list[int]] = []
        self.penalties: list[int] = []
        self.revealed: list[list[int]] = []
        self.ends: list[int] = []
        self.sizes: list[int] = []
        self.heads: list[int] = []
        self.by_end: list[int] = []

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, State):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"State({fields})"

    def cheapest_row(self) -> int:
        """The row with the fewest heads, then fewest cards, then the lowest index."""
        # Read from the rule's columns, as they are (in the order of the row ends): a match
        # asks this on most turns, for a card below every end.
        heads = self.heads
        least = min(heads)
        if heads.count(least) == 1:  # one row has the fewest heads (three C calls)
            return self.by_end[heads.index(least)]
        sizes, by_end = self.sizes, self.by_end
        best = -1  # among those rows: fewer cards, then the lower index, as one number
        for p, h in enumerate(heads):
            if h == least:
                key = sizes[p] * N_ROWS + by_end[p]
                if best < 0 or key < best:
                    best = key
        return best % N_ROWS

    @property
    def round_over(self) -> bool:
        return self.turn >= HAND_SIZE

    @property
    def match_over(self) -> bool:
        """True between rounds once some total has reached 66."""
        return self.turn >= HAND_SIZE and max(self.scores) >= END_SCORE


# -- the placement rule -------------------------------------------------------------------


# ends_below(ends, card): how many of the row ends (ascending) are below ``card``.  The card
# goes on the row of the last of them, at position ``ends_below(ends, card) - 1``: the
# nearest lower end; none (0) means it is below every end.  It is ``bisect_left``, a C call:
# simulations ask it millions of times per decision.
ends_below = bisect_left


def lay(
    ends: list[int],
    sizes: list[int],
    heads: list[int],
    cards: Sequence[int],
    lowest: int = -1,
    owners: Sequence[int] = (),
    totals: list[int] | None = None,
) -> int:
    """Place ``cards`` (ascending, of one turn) by the rule; returns the heads they take.

    The rows are given as the rule reads them (see the module): ``ends`` ascending and the
    ``sizes`` and ``heads`` of those rows, all three updated.  A card goes on the row of the
    nearest lower end; as that row's 6th card it takes the five and is the row's only card.
    A card below every end (only the lowest card of a turn can be) takes the row at position
    ``lowest``, its player's choice; that row, now holding only the card, has the lowest end:
    it moves to position 0.  With ``owners``
    (card -> whose it is) and ``totals``, the heads each card takes are added to
    ``totals[owners[card]]``.
    """
    got = 0
    h = HEADS
    limit = ROW_LIMIT
    for card in cards:
        p = ends_below(ends, card) - 1  # the nearest lower end; -1: below every end
        if p >= 0:
            ends[p] = card
            if sizes[p] < limit:
                sizes[p] += 1
                heads[p] += h[card]
                continue
            taken = heads[p]  # the row's 6th card takes the five
            sizes[p] = 1
            heads[p] = h[card]
        else:
            p = lowest
            if p < 0:
                raise ValueError(f"card {card} is below every row end: which row does it take?")
            taken = heads[p]
            del ends[p], sizes[p], heads[p]
            ends.insert(0, card)
            sizes.insert(0, 1)
            heads.insert(0, h[card])
        got += taken
        if totals is not None:
            totals[owners[card]] += taken
    return got


def rule_rows(
    rows: Sequence[Sequence[int]],
) -> tuple[list[int], list[int], list[int], list[int]]:
    """``rows`` (by index) as the rule reads them: ends ascending, and those rows' sizes,
    heads and indices."""
    # Two comprehensions and C calls (every round starts here): the ends by row, the rows'
    # order by their ends, then the rows in that order.
    ends = [r[-1] for r in rows]
    by_end = sorted(range(len(rows)), key=ends.__getitem__)
    ordered = [*map(rows.__getitem__, by_end)]
    return (
        [*map(ends.__getitem__, by_end)],
        [*map(len, ordered)],
        [sum(map(HEADS.__getitem__, r)) for r in ordered],  # heads_of, without its calls
        by_end,
    )


def target_row(rows: Sequence[Sequence[int]], card: int) -> int:
    """The row a card goes to: the largest row end below it, or -1 if it is below every end."""
    ends, _, _, by_end = rule_rows(rows)
    below = ends_below(ends, card)
    return by_end[below - 1] if below else -1


def cheapest(heads: Sequence[int], sizes: Sequence[int]) -> int:
    """The first of the rows (given by heads and sizes) with the fewest heads, then cards."""
    best = 0
    best_key = heads[0] * 8 + sizes[0]  # a row has at most 5 cards: heads decide first
    for i in _OTHER_ROWS:  # simulations ask this on every card below every end
        key = heads[i] * 8 + sizes[i]
        if key < best_key:
            best, best_key = i, key
    return best


_OTHER_ROWS = tuple(range(1, N_ROWS))


def cheapest_row(rows: Sequence[Sequence[int]]) -> int:
    """The row with the fewest heads; ties go to fewer cards, then to the lower index."""
    return cheapest(list(map(heads_of, rows)), list(map(len, rows)))


# -- set-up -------------------------------------------------------------------------------


def check_players(n_players: int) -> None:
    if not isinstance(n_players, int) or not MIN_PLAYERS <= n_players <= MAX_PLAYERS:
        raise SetupError(f"a match needs {MIN_PLAYERS} to {MAX_PLAYERS} players, not {n_players}")


def new_match(n_players: int, scores: Sequence[int] | None = None) -> State:
    """A match before its first round: totals at zero (or the given ones)."""
    check_players(n_players)
    totals = [0] * n_players if scores is None else list(scores)
    if len(totals) != n_players:
        raise SetupError(f"{len(totals)} scores given for {n_players} players")
    return State(n_players, totals)


_DECK = range(1, DECK_SIZE + 1)


def deal(rng: random.Random, n_players: int) -> tuple[list[list[int]], list[list[int]]]:
    """Shuffle all 104 cards and deal: 10 per seat, then 4 row starters; the rest is unused."""
    check_players(n_players)
    drawn = rng.sample(_DECK, n_players * HAND_SIZE + N_ROWS)
    hands = [sorted(drawn[i * HAND_SIZE : (i + 1) * HAND_SIZE]) for i in range(n_players)]
    base = n_players * HAND_SIZE
    rows = [[c] for c in drawn[base : base + N_ROWS]]
    return hands, rows


def _begin(state: State, hands: list[list[int]], rows: list[list[int]], turn: int) -> None:
    """Start the next round on this deal (the state takes the lists)."""
    n = state.n_players
    state.round += 1
    state.turn = turn
    state.hands = hands
    state.rows = rows
    state.ends, state.sizes, state.heads, state.by_end = rule_rows(rows)
    state.piles = [[] for _ in range(n)]
    state.penalties = [0] * n
    state.revealed = []


# ``m.bit_length()`` for every m up to the deck's size, read by ``_sample``.
_BITS = tuple(m.bit_length() for m in range(DECK_SIZE + 1))

# ``random.Random``, once a deal has looked it up: the bot side never deals, and does not
# import ``random`` for the engine's sake.
_plain_random: type | None = None


def _random_type() -> type:
    global _plain_random
    import random

    _plain_random = random.Random
    return _plain_random


def _sample(rng: random.Random, k: int) -> list[int]:
    """``rng.sample(range(1, 105), k)`` for a ``random.Random`` itself (not a subclass): the
    same calls of its ``getrandbits``, in the same order, so the same cards, without a Python
    call per card (``Random._randbelow``, which ``sample`` calls for each).

    ``Random.sample`` (CPython 3.11 to 3.13, unchanged) draws from a pool of the deck when
    the pool is smaller than a set of ``k`` (always, for a deal: ``k`` > 5 makes the set at
    least 277 entries), and ``_randbelow(m)`` is ``getrandbits(m.bit_length())`` drawn again
    while it is ``m`` or more.  ``tests/sdk/test_engine.py`` holds the two to the same cards.
    """
    getrandbits = rng.getrandbits
    bits = _BITS
    pool = list(_DECK)
    out = []
    for m in range(DECK_SIZE, DECK_SIZE - k, -1):  # m = n - i: the cards not yet drawn
        j = getrandbits(bits[m])
        while j >= m:
            j = getrandbits(bits[m])
        out.append(pool[j])
        pool[j] = pool[m - 1]  # the last undrawn card takes the drawn one's place
    return out


def deal_round(state: State, rng: random.Random) -> None:
    """Start the next round with a fresh deal from ``rng`` (``deal``): nothing to check."""
    # ``_begin(state, *deal(rng, n), 0)`` written out (every round of every match starts here):
    # the same draw from ``rng``, so the same deal, and the rows as the rule reads them made
    # straight from the four starters (one card each) instead of through ``rule_rows``.
    n = state.n_players
    base = n * HAND_SIZE
    if type(rng) is (_plain_random or _random_type()):
        drawn = _sample(rng, base + N_ROWS)
    else:  # a subclass may draw otherwise (its own ``random``, ``getrandbits`` or ``sample``)
        drawn = rng.sample(_DECK, base + N_ROWS)
    starters = drawn[base:]
    ends = sorted(starters)
    state.round += 1
    state.turn = 0
    state.hands = [sorted(drawn[i : i + HAND_SIZE]) for i in range(0, base, HAND_SIZE)]
    state.rows = [[c] for c in starters]
    state.ends = ends
    state.sizes = [1] * N_ROWS
    state.heads = [*map(HEADS.__getitem__, ends)]
    state.by_end = sorted(range(N_ROWS), key=starters.__getitem__)
    state.piles = [[] for _ in range(n)]
    state.penalties = [0] * n
    state.revealed = []


def trial(rows: Sequence[Sequence[int]]) -> State:
    """A one-seat state on a copy of ``rows``, to try placements on (``View.simulate``)."""
    state = State(1, [0])
    _begin(state, [[]], [list(r) for r in rows], 0)
    return state


def _check_cards(cards: list[int], what: str) -> None:
    for c in cards:
        if type(c) is not int or not 1 <= c <= DECK_SIZE:
            raise SetupError(f"{what} holds {c!r}, which is not a card 1..{DECK_SIZE}")


def start_round(
    state: State,
    hands: Sequence[Sequence[int]],
    rows: Sequence[Sequence[int]],
    *,
    position: bool = False,
) -> None:
    """Begin a round from an explicit deal (10 cards per hand, 4 one-card rows), checked.

    With ``position=True`` any legal position is accepted instead: rows of 1 to 5 ascending
    cards and hands of equal size 1..10, for tests and puzzles.
    """
    n = state.n_players
    if len(hands) != n:
        raise SetupError(f"{len(hands)} hands given for {n} players")
    if len(rows) != N_ROWS:
        raise SetupError(f"{len(rows)} rows given; the table has {N_ROWS}")
    new_hands = [sorted(h) for h in hands]
    new_rows = [list(r) for r in rows]
    size = len(new_hands[0])
    for seat, h in enumerate(new_hands):
        _check_cards(h, f"the hand of seat {seat}")
        if position:
            if len(h) != size or not 1 <= size <= HAND_SIZE:
                raise SetupError("every hand must hold the same number of cards, 1 to 10")
        elif len(h) != HAND_SIZE:
            raise SetupError(f"the hand of seat {seat} has {len(h)} cards, not {HAND_SIZE}")
    for i, r in enumerate(new_rows):
        _check_cards(r, f"row {i}")
        limit = ROW_LIMIT if position else 1
        if not 1 <= len(r) <= limit:
            raise SetupError(f"row {i} has {len(r)} cards; it must have 1 to {limit}")
        if any(a >= b for a, b in itertools.pairwise(r)):
            raise SetupError(f"row {i} is not ascending: {r}")
    everything = [c for h in new_hands for c in h] + [c for r in new_rows for c in r]
    if len(set(everything)) != len(everything):
        raise SetupError("a card appears twice in the deal")
    _begin(state, new_hands, new_rows, HAND_SIZE - size)


# -- decisions ------------------------------------------------------------------------------


def check_card(state: State, seat: int, card: Any) -> int:
    """Return ``card`` if seat may play it, else raise CardNotInHandError."""
    if type(card) is not int or card not in state.hands[seat]:
        raise CardNotInHandError(
            f"seat {seat} played {card!r}, which is not a card in its hand", seat=seat
        )
    return card


def check_row(seat: int, row: Any) -> int:
    """Return ``row`` if it is a row index 0..3, else raise InvalidRowError."""
    if type(row) is not int or not 0 <= row < N_ROWS:
        raise InvalidRowError(f"seat {seat} chose row {row!r}; rows are 0 to 3", seat=seat)
    return row


# -- a turn -------------------------------------------------------------------------------


def reveal(state: State, cards: Sequence[int], checked: bool = False) -> list[int]:
    """Reveal one card per seat: they leave the hands; returns the seats in resolution order.

    A card that is not in its seat's hand raises CardNotInHandError and no hand changes.
    ``checked``: the caller has made sure that each card is an ``int`` in its seat's hand (the
    runner does, as it replaces a bad card by a fallback), and no card is checked again.
    """
    if state.turn >= HAND_SIZE:
        raise SetupError("no turn to play: the round is over")
    if len(cards) != state.n_players:
        raise SetupError(f"{len(cards)} cards revealed for {state.n_players} players")
    hands = state.hands
    if checked:
        # The cards leave the hands in one C loop (``remove`` returns None: ``any`` runs it to
        # the end); a match reveals every turn through here.
        any(map(list.remove, hands, cards))
        state.revealed.append(list(cards))
        return sorted(range(len(cards)), key=cards.__getitem__)
    for seat, card in enumerate(cards):
        # Taking the card out of the hand is the membership check (a bool is not a card).
        if type(card) is int:
            try:
                hands[seat].remove(card)
                continue
            except ValueError:
                pass
        for s in range(seat):  # put back the cards taken out: the hands are as they were
            hands[s].insert(bisect_left(hands[s], cards[s]), cards[s])
        check_card(state, seat, card)  # raises CardNotInHandError
    state.revealed.append(list(cards))
    return sorted(range(len(cards)), key=cards.__getitem__)


def place(state: State, seat: int, card: int, choose_row: ChooseRow) -> Take | None:
    """Resolve one revealed card by the rule (``lay``); returns the take it caused, if any."""
    takes = settle(state, (seat,), {seat: card}, choose_row)
    return takes[0] if takes else None


def settle(
    state: State,
    seats: Sequence[int],
    cards: Sequence[int] | Mapping[int, int],
    choose_row: ChooseRow,
) -> list[Take]:
    """Place the card of each of ``seats`` (in that order, ascending cards) by the rule.

    The cards are revealed (``reveal``): ``resolve`` and ``place`` come here, and so does the
    runner, which reveals a turn's cards itself as it checks them; ending the turn
    (``end_turn``) is the caller's.
    """
    ends, sizes, heads = state.ends, state.sizes, state.heads
    by_end, rows = state.by_end, state.rows
    takes: list[Take] = []
    for seat in seats:
        card = cards[seat]
        below = ends_below(ends, card)
        if below:
            p = below - 1
            row = by_end[p]  # the nearest lower end's row, which the card will end
            if sizes[p] < ROW_LIMIT:
                # ``lay``'s first case (most cards), written out: every turn of every match
                # passes here, and the call costs as much as the placement.
                ends[p] = card
                sizes[p] += 1
                heads[p] += HEADS[card]
                rows[row].append(card)
                continue
            got = lay(ends, sizes, heads, (card,))
        else:
            # Below every end: the player chooses, before anything changes (a bad row raises;
            # ``check_row``'s test, written out, as a call costs more than the test).
            if choose_row is None:
                row = state.cheapest_row()
            else:
                row = choose_row(seat, card)
                if type(row) is not int or not 0 <= row < N_ROWS:
                    check_row(seat, row)
            p = by_end.index(row)
            got = lay(ends, sizes, heads, (card,), p)
            del by_end[p]
            by_end.insert(0, row)  # as ``lay`` moved it: the row now has the lowest end
        if not got:
            rows[row].append(card)
            continue
        taken = rows[row]
        rows[row] = [card]
        state.penalties[seat] += got
        state.piles[seat].extend(taken)
        takes.append(
            {"seat": seat, "row": row, "cards": taken, "reason": "sixth" if below else "lowest"}
        )
    return takes


def end_turn(state: State) -> None:
    """Every revealed card of the turn is placed: the next turn (or the end of the round)."""
    state.turn += 1


def resolve(state: State, order: Sequence[int], choose_row: ChooseRow) -> list[Take]:
    """Place the revealed cards of this turn in ascending order; ends the turn."""
    takes = settle(state, order, state.revealed[-1], choose_row)
    end_turn(state)
    return takes


def play_turn(
    state: State, cards: Sequence[int], choose_row: ChooseRow, checked: bool = False
) -> list[Take]:
    """One whole turn: reveal the seats' cards, then resolve them in ascending order.

    ``checked``: as for ``reveal``, the caller has checked that each card is in its hand.
    """
    # ``resolve(state, reveal(state, cards, checked), choose_row)``, calls less: every match
    # plays every turn through here.
    if checked and state.turn < HAND_SIZE and len(cards) == state.n_players:
        # ``reveal``'s checked case, written out.
        any(map(list.remove, state.hands, cards))
        state.revealed.append(list(cards))
        order = sorted(range(len(cards)), key=cards.__getitem__)
    else:
        order = reveal(state, cards, checked)  # it raises, or checks the cards
    takes = settle(state, order, state.revealed[-1], choose_row)
    state.turn += 1  # end_turn
    return takes


# -- scoring ------------------------------------------------------------------------------


def finish_round(state: State) -> list[int]:
    """Add this round's penalties to the totals; returns the penalties."""
    if state.turn < HAND_SIZE:
        raise SetupError(f"the round is not over: turn {state.turn} of {HAND_SIZE}")
    scores = state.scores
    for seat, p in enumerate(state.penalties):
        scores[seat] += p
    return list(state.penalties)


def ranks(scores: Sequence[int]) -> list[int]:
    """1 + the number of seats with a strictly lower total; equal totals share a place."""
    # In the ascending totals, ``bisect_left`` finds how many are strictly lower: one C call
    # a seat instead of a count over every other seat.
    ordered = sorted(scores)
    return [bisect_left(ordered, s) + 1 for s in scores]
