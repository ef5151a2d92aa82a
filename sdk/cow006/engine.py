"""The pure rules of Корова 006: deal, simultaneous reveal, ordered resolution, scoring.

No I/O and no global random state: randomness comes in as a ``random.Random`` (or an explicit
deal), decisions come in as arguments, and every transition returns the events it produced, so
the match log falls out of the transitions.  The only callback is ``choose_row``, asked at the
moment a card lower than every row end is resolved, after the lower cards of the same turn.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from typing import Any

from .cards import (
    DECK_SIZE,
    END_SCORE,
    HAND_SIZE,
    HEADS,
    MAX_PLAYERS,
    MIN_PLAYERS,
    N_ROWS,
    ROW_LIMIT,
)
from .errors import CardNotInHandError, InvalidRowError, SetupError

# A take, as it appears in the match log: {"seat", "row", "cards", "reason"}.
Take = dict[str, Any]
# choose_row(seat, card) -> row index; asked only for a card below every row end.
ChooseRow = Callable[[int, int], Any]


class State:
    """Everything about a match in progress, as plain data.

    ``rows`` are the four rows (row index 0..3, oldest card first); ``hands`` the cards still
    held per seat; ``piles`` the cards taken this round per seat; ``penalties`` the heads taken
    this round per seat; ``scores`` the totals of the finished rounds; ``revealed`` the cards of
    each resolved turn of this round, by seat.  ``round`` counts from 0 and ``turn`` is the index
    of the next turn to play in the round (0..10).  (A plain class, not a dataclass: bot
    processes import the engine, and ``dataclasses`` costs them ~10 ms of start-up.)
    """

    __slots__ = (
        "hands",
        "n_players",
        "penalties",
        "piles",
        "revealed",
        "round",
        "rows",
        "scores",
        "turn",
    )

    def __init__(
        self,
        n_players: int,
        scores: list[int],
        round: int = -1,
        turn: int = 0,
        rows: list[list[int]] | None = None,
        hands: list[list[int]] | None = None,
        piles: list[list[int]] | None = None,
        penalties: list[int] | None = None,
        revealed: list[list[int]] | None = None,
    ) -> None:
        self.n_players = n_players
        self.scores = scores
        self.round = round
        self.turn = turn
        self.rows = rows if rows is not None else []
        self.hands = hands if hands is not None else []
        self.piles = piles if piles is not None else []
        self.penalties = penalties if penalties is not None else []
        self.revealed = revealed if revealed is not None else []

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, State):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"State({fields})"

    @property
    def round_over(self) -> bool:
        return self.turn >= HAND_SIZE

    @property
    def match_over(self) -> bool:
        """True between rounds once some total has reached 66."""
        return self.turn >= HAND_SIZE and max(self.scores) >= END_SCORE


def check_players(n_players: int) -> None:
    if not isinstance(n_players, int) or not MIN_PLAYERS <= n_players <= MAX_PLAYERS:
        raise SetupError(f"a match needs {MIN_PLAYERS} to {MAX_PLAYERS} players, not {n_players}")


def new_match(n_players: int, scores: Sequence[int] | None = None) -> State:
    """A match before its first round: totals at zero (or the given ones)."""
    check_players(n_players)
    totals = [0] * n_players if scores is None else list(scores)
    if len(totals) != n_players:
        raise SetupError(f"{len(totals)} scores given for {n_players} players")
    # turn = HAND_SIZE marks "between rounds", so start_round is the next legal step.
    return State(n_players=n_players, scores=totals, round=-1, turn=HAND_SIZE)


def deal(rng: random.Random, n_players: int) -> tuple[list[list[int]], list[list[int]]]:
    """Shuffle all 104 cards and deal: 10 per seat, then 4 row starters; the rest is unused."""
    check_players(n_players)
    drawn = rng.sample(range(1, DECK_SIZE + 1), n_players * HAND_SIZE + N_ROWS)
    hands = [sorted(drawn[i * HAND_SIZE : (i + 1) * HAND_SIZE]) for i in range(n_players)]
    base = n_players * HAND_SIZE
    rows = [[c] for c in drawn[base : base + N_ROWS]]
    return hands, rows


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
    checked: bool = False,
) -> None:
    """Begin a round from an explicit deal (10 cards per hand, 4 one-card rows).

    With ``position=True`` any legal position is accepted instead: rows of 1 to 5 ascending
    cards and hands of equal size 1..10, for tests and puzzles.  ``checked=True`` skips the
    validation, for a deal that ``deal`` has just made.
    """
    n = state.n_players
    if checked:
        state.round += 1
        state.turn = 0
        state.hands = [list(h) for h in hands]
        state.rows = [list(r) for r in rows]
        state.piles = [[] for _ in range(n)]
        state.penalties = [0] * n
        state.revealed = []
        return
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
    state.round += 1
    state.turn = HAND_SIZE - size
    state.hands = new_hands
    state.rows = new_rows
    state.piles = [[] for _ in range(n)]
    state.penalties = [0] * n
    state.revealed = []


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


def target_row(rows: Sequence[Sequence[int]], card: int) -> int:
    """The row a card goes to: the largest row end below it, or -1 if it is below every end."""
    best = -1
    best_end = 0
    for i, row in enumerate(rows):
        end = row[-1]
        if best_end < end < card:
            best = i
            best_end = end
    return best


def cheapest_row(rows: Sequence[Sequence[int]]) -> int:
    """The row with the fewest heads; ties go to fewer cards, then to the lower index."""
    heads = HEADS
    best = 0
    best_key = (1 << 30, 0)
    for i, row in enumerate(rows):
        key = (sum(heads[c] for c in row), len(row))
        if key < best_key:
            best, best_key = i, key
    return best


def reveal(state: State, cards: Sequence[int], *, checked: bool = False) -> list[int]:
    """Check and reveal one card per seat: they leave the hands; returns the resolution order."""
    if state.turn >= HAND_SIZE:
        raise SetupError("no turn to play: the round is over")
    if len(cards) != state.n_players:
        raise SetupError(f"{len(cards)} cards revealed for {state.n_players} players")
    hands = state.hands
    if not checked:
        for seat, card in enumerate(cards):
            check_card(state, seat, card)
    for seat, card in enumerate(cards):
        hands[seat].remove(card)
    state.revealed.append(list(cards))
    return sorted(range(len(cards)), key=cards.__getitem__)


def place(state: State, seat: int, card: int, choose_row: ChooseRow) -> Take | None:
    """Resolve one revealed card; returns the take it caused, if any."""
    rows = state.rows
    best = -1
    best_end = 0
    for i in range(N_ROWS):
        end = rows[i][-1]
        if best_end < end < card:
            best = i
            best_end = end
    if best >= 0:
        row = rows[best]
        if len(row) < ROW_LIMIT:
            row.append(card)
            return None
        reason = "sixth"
    else:
        best = check_row(seat, choose_row(seat, card))
        reason = "lowest"
    taken = rows[best]
    rows[best] = [card]
    heads = HEADS
    state.penalties[seat] += sum(heads[c] for c in taken)
    state.piles[seat].extend(taken)
    return {"seat": seat, "row": best, "cards": taken, "reason": reason}


def resolve(state: State, order: Sequence[int], choose_row: ChooseRow) -> list[Take]:
    """Place the revealed cards of this turn in ascending order; ends the turn."""
    cards = state.revealed[-1]
    rows = state.rows
    takes = []
    for seat in order:
        card = cards[seat]
        best = -1
        best_end = 0
        for i, row in enumerate(rows):
            end = row[-1]
            if best_end < end < card:
                best = i
                best_end = end
        if best >= 0:
            row = rows[best]
            if len(row) < ROW_LIMIT:
                row.append(card)
                continue
            reason = "sixth"
        else:
            best = check_row(seat, choose_row(seat, card))
            reason = "lowest"
        taken = rows[best]
        rows[best] = [card]
        state.penalties[seat] += sum(map(HEADS.__getitem__, taken))
        state.piles[seat].extend(taken)
        takes.append({"seat": seat, "row": best, "cards": taken, "reason": reason})
    state.turn += 1
    return takes


def play_turn(
    state: State, cards: Sequence[int], choose_row: ChooseRow, *, checked: bool = False
) -> list[Take]:
    """One whole turn: reveal the seats' cards, then resolve them in ascending order.

    ``checked=True`` skips the hand check for callers that have already made it.
    """
    return resolve(state, reveal(state, cards, checked=checked), choose_row)


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
    return [1 + sum(1 for other in scores if other < s) for s in scores]
