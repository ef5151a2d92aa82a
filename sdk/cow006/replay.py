"""A ``cow006-match-1`` log replayed step by step through the engine.

``steps(log)`` is the one replay of a log: ``cow006.log.verify`` checks a log against it,
``cow006 replay`` prints it and the web viewer draws it.  It yields, in order:

* ``Deal``: a round begins, with the rows and hands as dealt;
* ``Reveal``: a turn's cards are revealed, by seat, with the order they are placed in;
* ``Placement``: one card placed, lowest first, with the rows after it and the row it took;
* ``RoundEnd``: the round's penalties and the totals after it.

Every row comes from the engine (``cow006.engine``): only the decisions are read from the log,
the cards played and the row each "lowest" take chose.  What a log records besides (its takes,
the rows after each turn, penalties, scores) is not read here; ``verify`` compares it with the
steps.  A log that cannot be replayed as a whole match raises LogError at its first problem,
naming the place (``rounds[1].turns[3]: ...``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from . import engine
from ._checks import a_list, int_list, integer, need
from ._errors import Cow006Error, LogError
from .cards import DECK_SIZE, END_SCORE, HAND_SIZE, MAX_PLAYERS, MIN_PLAYERS, N_ROWS, heads_of

if TYPE_CHECKING:
    from .log import Take, TakeReason

Cards = tuple[int, ...]
Rows = tuple[Cards, ...]


class Taken(NamedTuple):
    """A row taken: by whom, which row, its cards (oldest first), why, and its heads.

    ``costs``, for a "lowest" take: the heads of every row when the player chose (the row
    taken is one of them); None for a "sixth" take, which leaves no choice.
    """

    seat: int
    row: int
    cards: Cards
    reason: TakeReason
    heads: int
    costs: tuple[int, ...] | None

    def record(self) -> Take:
        """The take as the log records it."""
        return {
            "seat": self.seat,
            "row": self.row,
            "cards": list(self.cards),
            "reason": self.reason,
        }


class Deal(NamedTuple):
    """Round ``round`` (from 0) begins; ``scores`` are the totals before it."""

    round: int
    rows: Rows
    hands: tuple[Cards, ...]
    scores: tuple[int, ...]


class Reveal(NamedTuple):
    """A turn's cards, by seat; ``order`` is the seats by ascending card, the order of the
    placements.  ``rows`` and ``penalties`` (heads taken this round) are before the turn."""

    round: int
    turn: int
    cards: Cards
    order: tuple[int, ...]
    rows: Rows
    penalties: tuple[int, ...]


class Placement(NamedTuple):
    """The ``nth`` card of a turn placed (1 to the number of seats): the row it went to (or
    took), the rows and this round's penalties after it, and its take if any."""

    round: int
    turn: int
    nth: int
    seat: int
    card: int
    row: int
    rows: Rows
    penalties: tuple[int, ...]
    take: Taken | None


class RoundEnd(NamedTuple):
    """The round's heads taken per seat, and the totals after it."""

    round: int
    penalties: tuple[int, ...]
    scores: tuple[int, ...]


Step = Deal | Reveal | Placement | RoundEnd


def n_players(log: Mapping[str, Any]) -> int:
    """The number of seats of a log, after checking its ``players``."""
    seats = a_list(log.get("players"), "players")
    n = len(seats)
    need(MIN_PLAYERS <= n <= MAX_PLAYERS, "players", f"a match has 2 to 10 players, found {n}")
    for i, p in enumerate(seats):
        need(isinstance(p, dict), f"players[{i}]", "expected an object")
        integer(p.get("seat"), f"players[{i}].seat")
        need(p.get("seat") == i, f"players[{i}]", "seat out of order")
        need(isinstance(p.get("agent"), str), f"players[{i}]", "agent must be a string")
    return n


def steps(log: Mapping[str, Any]) -> Iterator[Step]:
    """Replay ``log`` (see the module): every step of the match, in order."""
    n = n_players(log)
    rounds = a_list(log.get("rounds"), "rounds", "expected a non-empty list")
    need(bool(rounds), "rounds", "expected a non-empty list")
    state = engine.new_match(n)
    for r, rnd in enumerate(rounds):
        where = f"rounds[{r}]"
        need(isinstance(rnd, dict), where, "expected an object")
        need(
            not state.match_over, where, f"the match should have ended: a total reached {END_SCORE}"
        )
        rows = a_list(rnd.get("rows"), f"{where}.rows", "expected 4 rows")
        need(len(rows) == N_ROWS, f"{where}.rows", "expected 4 rows")
        for i, row in enumerate(rows):
            int_list(row, f"{where}.rows[{i}]", 1)
        hands = a_list(rnd.get("hands"), f"{where}.hands", f"expected {n} hands")
        need(len(hands) == n, f"{where}.hands", f"expected {n} hands")
        for s, hand in enumerate(hands):
            int_list(hand, f"{where}.hands[{s}]", HAND_SIZE)
        try:
            engine.start_round(state, hands, rows)
        except Cow006Error as exc:
            raise LogError(f"{where}: {exc}") from None
        yield Deal(r, _rows(state.rows), _rows(state.hands), tuple(state.scores))
        turns = a_list(rnd.get("turns"), f"{where}.turns", "expected 10 turns")
        need(len(turns) == HAND_SIZE, f"{where}.turns", "expected 10 turns")
        for t, turn in enumerate(turns):
            yield from _turn(state, r, t, turn, f"{where}.turns[{t}]")
        penalties = engine.finish_round(state)
        yield RoundEnd(r, tuple(penalties), tuple(state.scores))
    need(state.match_over, "rounds", f"the match ended before any total reached {END_SCORE}")


def _rows(rows: list[list[int]]) -> Rows:
    return tuple(map(tuple, rows))


def _turn(state: engine.State, r: int, t: int, turn: Any, where: str) -> Iterator[Step]:
    """The steps of one turn: its reveal, then each placement."""
    need(isinstance(turn, dict), where, "expected an object")
    cards = int_list(turn.get("cards"), f"{where}.cards", state.n_players)
    for c in cards:
        need(1 <= c <= DECK_SIZE, f"{where}.cards", f"{c} is not a card")
    takes = a_list(turn.get("takes"), f"{where}.takes")
    # The log's only other decision: the row a "lowest" card's player chose.
    choices: dict[int, Any] = {}
    for i, tk in enumerate(takes):
        need(isinstance(tk, dict), f"{where}.takes[{i}]", "expected an object")
        if tk.get("reason") == "lowest" and type(tk.get("seat")) is int:
            choices[tk["seat"]] = tk.get("row")
    costs: list[tuple[int, ...]] = []  # the rows' heads when a "lowest" card's player chose

    def choose_row(seat: int, card: int) -> Any:
        if seat not in choices:
            raise LogError(
                f"{where}: card {card} of seat {seat} is below every row end, "
                "but no 'lowest' take records its row"
            )
        costs.append(tuple(map(heads_of, state.rows)))
        return choices[seat]

    snap = list(map(tuple, state.rows))  # the rows as tuples: only a placed card's changes
    penalties = tuple(state.penalties)  # changed by a take only
    try:
        order = engine.reveal(state, cards)
    except Cow006Error as exc:
        raise LogError(f"{where}: {exc}") from None
    yield Reveal(r, t, tuple(cards), tuple(order), tuple(snap), penalties)
    for k, seat in enumerate(order, 1):
        card = cards[seat]
        try:
            take = engine.place(state, seat, card, choose_row)
        except LogError:
            raise
        except Cow006Error as exc:
            raise LogError(f"{where}: {exc}") from None
        if take is None:
            row = state.by_end[state.ends.index(card)]  # the row whose end it now is
            taken = None
        else:
            row = take["row"]
            reason = take["reason"]
            penalties = tuple(state.penalties)
            taken = Taken(
                seat,
                row,
                tuple(take["cards"]),
                reason,
                heads_of(take["cards"]),
                costs.pop() if reason == "lowest" else None,
            )
        snap[row] = tuple(state.rows[row])
        yield Placement(r, t, k, seat, card, row, tuple(snap), penalties, taken)
    engine.end_turn(state)


def takes_of(turn_steps: list[Placement]) -> list[Take]:
    """The takes of a turn's placements, as the log records them (in resolution order)."""
    return [p.take.record() for p in turn_steps if p.take is not None]
