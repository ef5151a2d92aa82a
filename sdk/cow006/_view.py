"""What one seat may see: its own hand, the table, the totals and this round's reveals.

A ``View`` never holds another seat's hand or the undealt cards.  It is a read-only snapshot
made of tuples, so an agent can keep it and cannot change the match through it.  A runner's
view makes its table (``Table``, what the seats' views of one moment share) when an agent first
reads a field of it, from copies that nothing changes any more (``pending_table``): a turn
whose agents read only their hands makes no table at all.
"""

from __future__ import annotations

from . import engine
from .cards import DECK_SIZE, HEADS

# The bot side imports neither ``typing`` nor ``collections`` (docs/sandbox.md, Start-up):
# names used only in annotations are the type checker's, and ``Table`` is built by
# ``cow006._tuples`` at run time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NamedTuple

    from .engine import State

    # A table not made yet, shared by the views of one moment (a runner's turn): the table
    # once made, or None; then the ``Table`` fields, but ``rows`` as lists that nothing
    # changes any more (the log's copy of the rows before the turn) and ``revealed`` as a
    # list of turns (lists of cards: the engine's ``State.revealed``) that only grows,
    # followed by how many of them are revealed.
    Pending = list[Any]
else:
    from ._tuples import NamedTuple

Rows = tuple[tuple[int, ...], ...]


class Table(NamedTuple):
    """The public part of a view, shared by every seat's view of the same moment.

    A tuple, so one seat's agent cannot change what the next seat sees.
    """

    rows: Rows
    scores: tuple[int, ...]
    penalties: tuple[int, ...]
    revealed: tuple[tuple[int, ...], ...]
    starters: tuple[int, ...]
    round: int
    turn: int
    n_players: int


class View:
    """One seat's view of the match at the moment it is asked to decide.

    Attributes (the first four are a fixed contract):
      hand        this seat's cards, ascending
      rows        the 4 rows, oldest card first (row index 0..3)
      seat        this seat's index, 0-based
      scores      every seat's total from the finished rounds
      penalties   every seat's heads taken so far in this round
      revealed    this round's resolved turns: one tuple per turn, the card of each seat
      starters    the 4 cards that started the rows this round
      round       0-based round number;  turn: 0-based turn number within the round (0..9)
      n_players   number of seats
      time_left   seconds this seat may still spend on this decision (None: not limited)
      card        in ``take_row``: the card you are placing, which is below every row end;
                  in ``play``: None
      current     in ``take_row``: the cards revealed in this turn, by seat (else None)
    """

    # The runner makes a turn's views without calling ``__init__`` and sets every one of these
    # itself (``MatchRunner._play_turns``): a slot added here is added there too.
    __slots__ = ("_pending", "_table", "card", "current", "hand", "seat", "time_left")

    def __init__(
        self,
        seat: int,
        hand: tuple[int, ...],
        table: Table,
        time_left: float | None = None,
        card: int | None = None,
        current: tuple[int, ...] | None = None,
    ) -> None:
        self.seat = seat
        self.hand = hand
        self._table: Table | None = table
        # What the table is made of, until it is made (a runner's views, ``Pending``): the
        # runner's views make their table on the first read of one of its fields, so a turn
        # whose agents read only their hands makes none.
        self._pending: Pending | None = None
        self.time_left = time_left
        self.card = card
        self.current = current

    @property
    def table(self) -> Table:
        """The public part of the view, shared by the seats' views of the same moment."""
        t = self._table
        return t if t is not None else self._load()

    def _load(self) -> Table:
        pending = self._pending
        assert pending is not None  # a view has a table or what it is made of
        self._table = table = pending_table(pending)
        self._pending = None
        return table

    # The shared table, read through properties so making a view stays cheap (each reads the
    # slot itself rather than through ``table``: one property call, not two).
    @property
    def rows(self) -> Rows:
        t = self._table
        return (t if t is not None else self._load()).rows

    @property
    def scores(self) -> tuple[int, ...]:
        t = self._table
        return (t if t is not None else self._load()).scores

    @property
    def penalties(self) -> tuple[int, ...]:
        t = self._table
        return (t if t is not None else self._load()).penalties

    @property
    def revealed(self) -> tuple[tuple[int, ...], ...]:
        t = self._table
        return (t if t is not None else self._load()).revealed

    @property
    def starters(self) -> tuple[int, ...]:
        t = self._table
        return (t if t is not None else self._load()).starters

    @property
    def round(self) -> int:
        t = self._table
        return (t if t is not None else self._load()).round

    @property
    def turn(self) -> int:
        t = self._table
        return (t if t is not None else self._load()).turn

    @property
    def n_players(self) -> int:
        t = self._table
        return (t if t is not None else self._load()).n_players

    def __repr__(self) -> str:
        return (
            f"View(seat={self.seat}, round={self.round}, turn={self.turn}, hand={self.hand}, "
            f"rows={self.rows}, scores={self.scores})"
        )

    # -- the table -------------------------------------------------------------------------
    def row_heads(self, row: int | None = None) -> Any:
        """Heads in row ``row``; with no argument, a list of the heads of all 4 rows.

        So ``min(range(4), key=view.row_heads)`` picks the cheapest row to take.
        """
        if row is None:
            return [sum(HEADS[c] for c in r) for r in self.rows]
        return sum(HEADS[c] for c in self.rows[row])

    @property
    def row_ends(self) -> tuple[int, ...]:
        """The last card of each row: the only card that decides where a card goes."""
        return tuple(r[-1] for r in self.rows)

    @property
    def my_score(self) -> int:
        return self.scores[self.seat]

    def target_row(self, card: int) -> int:
        """The row ``card`` would go to on the current rows, or -1 if below every end."""
        return engine.target_row(self.rows, card)

    def simulate(self, card: int, row_choice: int | None = None) -> tuple[int, int, Rows]:
        """Place ``card`` alone on the current rows: (row, heads taken, rows after).

        A card below every end takes ``row_choice`` (default: the row with fewest heads).
        Other cards revealed in the same turn are not known in advance, so this is the
        outcome if every other card of the turn goes elsewhere or later.
        """
        trial = engine.trial(self.rows)
        chosen = row_choice if row_choice is not None else self.cheapest_row()
        take = engine.place(trial, 0, card, lambda seat, card: chosen)
        row = take["row"] if take is not None else trial.by_end[trial.ends.index(card)]
        return row, trial.penalties[0], tuple(map(tuple, trial.rows))

    def cheapest_row(self) -> int:
        """The row with the fewest heads (ties: fewer cards, then the lower index)."""
        return engine.cheapest_row(self.rows)

    # -- what is known about the cards -----------------------------------------------------
    def seen(self) -> set[int]:
        """Cards this seat has seen this round: its hand, the starters and every reveal."""
        out = set(self.hand)
        out.update(self.starters)
        for turn in self.revealed:
            out.update(turn)
        if self.current:
            out.update(self.current)
        for r in self.rows:
            out.update(r)
        return out

    def unseen(self) -> list[int]:
        """Cards that are in another hand or were never dealt this round, ascending."""
        seen = self.seen()
        return [c for c in range(1, DECK_SIZE + 1) if c not in seen]

    # -- the wire form ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "seat": self.seat,
            "hand": list(self.hand),
            "rows": [list(r) for r in self.rows],
            "scores": list(self.scores),
            "penalties": list(self.penalties),
            "revealed": [list(t) for t in self.revealed],
            "starters": list(self.starters),
            "round": self.round,
            "turn": self.turn,
            "n_players": self.n_players,
            "time_left": self.time_left,
        }
        if self.card is not None:
            d["card"] = self.card
            d["current"] = list(self.current or ())
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> View:
        current = d.get("current")
        table = Table(
            rows=tuple(tuple(r) for r in d["rows"]),
            scores=tuple(d["scores"]),
            penalties=tuple(d["penalties"]),
            revealed=tuple(tuple(t) for t in d["revealed"]),
            starters=tuple(d.get("starters", ())),
            round=d["round"],
            turn=d["turn"],
            n_players=d["n_players"],
        )
        return cls(
            seat=d["seat"],
            hand=tuple(d["hand"]),
            table=table,
            time_left=d.get("time_left"),
            card=d.get("card"),
            current=tuple(current) if current is not None else None,
        )


def table_of(
    state: State, starters: tuple[int, ...], revealed: tuple[tuple[int, ...], ...]
) -> Table:
    """The public table of ``state`` at this moment: what every seat's view shares."""
    return new_table(
        tuple(map(tuple, state.rows)),
        tuple(state.scores),
        tuple(state.penalties),
        revealed,
        starters,
        state.round,
        state.turn,
        state.n_players,
    )


def new_table(
    rows: Rows,
    scores: tuple[int, ...],
    penalties: tuple[int, ...],
    revealed: tuple[tuple[int, ...], ...],
    starters: tuple[int, ...],
    round: int,
    turn: int,
    n_players: int,
) -> Table:
    """``Table(...)`` from its fields, positional, without the named tuple's Python-level
    ``__new__`` (the runner makes one per turn)."""
    return _tuple_new(Table, (rows, scores, penalties, revealed, starters, round, turn, n_players))


_tuple_new = tuple.__new__


def pending_table(pending: Pending) -> Table:
    """The table ``pending`` is made of (``Pending``), made the first time it is asked for."""
    table: Table | None = pending[0]
    if table is None:
        rows, scores, penalties, revealed, known, *rest = pending[1:]
        table = pending[0] = _tuple_new(
            Table,
            (
                tuple(map(tuple, rows)),
                scores,
                penalties,
                tuple(map(tuple, revealed[:known])),
                *rest,
            ),
        )
    return table


def observe(
    state: State,
    seat: int,
    starters: Sequence[int],
    *,
    time_left: float | None = None,  # the seconds this seat may still spend (None: no limit)
    card: int | None = None,  # the card being placed, for a take-row decision
) -> View:
    """The view of ``seat``; with ``card`` set, the view for a take-row decision mid-turn.

    During resolution the last entry of ``state.revealed`` is the turn being resolved: it is
    shown as ``current`` and not in ``revealed``.
    """
    revealed = state.revealed
    current = None
    if card is not None:
        current = tuple(revealed[-1])
        revealed = revealed[:-1]
    table = table_of(state, tuple(starters), tuple(map(tuple, revealed)))
    return View(seat, tuple(state.hands[seat]), table, time_left, card, current)
