"""One match driven one decision at a time, as an environment needs it, and its log.

The runner (``cow006._runner``) asks agents for their decisions and waits for the answers; an
environment cannot: its decisions come in through ``step``.  ``Game`` holds a match of the
reference engine (``cow006.engine``) between two steps and records it as the runner does, a
``cow006-match-1`` log that ``cow006.log.verify`` replays.  A turn is two phases:

* ``play``: every seat chooses a card; the cards are revealed together (``engine.reveal``);
* ``row``: only when the lowest card of the turn is below every row end, its seat chooses
  the row it takes (only the lowest card can be, and it is placed first, so the choice is
  asked before any card of the turn is placed, as the runner asks ``take_row``).

Then the cards are placed (``engine.resolve``); after the 10th turn the round is scored and
the next one dealt from the match seed, until a total reaches 66.  No rule lives here.

Standard library only: the observation and the spaces (numpy) are ``cow006.rl.obs``'s.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Sequence
from typing import Literal

from .. import engine
from .._faults import MAX_DETAIL, FaultKind
from .._view import View, observe
from ..cards import HEADS
from ..log import FORMAT, Fault, MatchLog, Round, Take
from ..untrusted import clean

Phase = Literal["play", "row", "over"]


class Game:
    """A match between ``n_players`` seats, played by ``play`` and ``take`` calls."""

    def __init__(self, seed: int, names: Sequence[str], agent_seeds: Sequence[int]) -> None:
        n = len(names)
        engine.check_players(n)
        self.n_players = n
        self.seed = seed
        self.rng = random.Random(seed)  # the deals, as the runner draws them
        self.state = engine.new_match(n)
        self.phase: Phase = "play"
        self.row_seat = -1  # in the row phase: the seat whose card is below every row end
        self.row_card = 0
        self.starters: tuple[int, ...] = ()
        # Heads taken by each seat since the last ``collect`` (the rewards of a step).
        self.taken = [0] * n
        self.faults: list[Fault] = []
        self.log: MatchLog = {
            "format": FORMAT,
            "seed": seed,
            "players": [{"seat": i, "agent": str(name)} for i, name in enumerate(names)],
            "rounds": [],
            "scores": [],
            "ranks": [],
            "faults": self.faults,
            "forfeited": [],
        }
        self._agent_seeds = list(agent_seeds)  # logged at the end, as the runner does
        self._round: Round | None = None
        self._deal()

    # -- what a seat sees and may do --------------------------------------------------------
    def view(self, seat: int) -> View:
        """What ``seat`` sees now (in the row phase, the row seat's view has ``card`` set)."""
        card = self.row_card if self.phase == "row" and seat == self.row_seat else None
        return observe(self.state, seat, self.starters, card=card)

    def hand(self, seat: int) -> list[int]:
        return self.state.hands[seat]

    def asked(self, seat: int) -> bool:
        """Whether ``seat`` has a decision to make in this phase."""
        if self.phase == "play":
            return True
        return self.phase == "row" and seat == self.row_seat

    # -- the two phases -------------------------------------------------------------------
    def play(self, cards: Sequence[int]) -> None:
        """Reveal one card per seat (each must be in its hand: the caller checks)."""
        assert self.phase == "play", self.phase
        st = self.state
        order = engine.reveal(st, list(cards))
        lowest = order[0]
        if cards[lowest] < st.ends[0]:  # below every row end: its seat chooses a row first
            self.phase = "row"
            self.row_seat = lowest
            self.row_card = cards[lowest]
            return
        self._resolve(order, -1)

    def take(self, row: int) -> None:
        """The row seat's choice (a row 0..3: the caller checks)."""
        assert self.phase == "row", self.phase
        cards = self.state.revealed[-1]
        order = sorted(range(self.n_players), key=cards.__getitem__)
        self._resolve(order, row)

    def fault(self, seat: int, kind: FaultKind, detail: str) -> None:
        """Record a fault of ``seat`` in the log (an illegal action, an opponent's error)."""
        st = self.state
        self.faults.append(
            {
                "seat": seat,
                "round": max(st.round, 0),
                "turn": min(st.turn, 10),
                "kind": str(kind),
                "detail": clean(detail, MAX_DETAIL),
            }
        )

    def collect(self) -> list[int]:
        """The heads each seat took since the last call (and start counting again)."""
        out, self.taken = self.taken, [0] * self.n_players
        return out

    # -- the match's course -----------------------------------------------------------------
    def _resolve(self, order: list[int], row: int) -> None:
        st = self.state
        takes: list[Take] = engine.resolve(
            st, order, (lambda seat, card: row) if row >= 0 else None
        )
        for t in takes:
            self.taken[t["seat"]] += sum(HEADS[c] for c in t["cards"])
        assert self._round is not None
        self._round["turns"].append(
            {"cards": list(st.revealed[-1]), "takes": takes, "rows": [list(r) for r in st.rows]}
        )
        self.phase = "play"
        self.row_seat = -1
        self.row_card = 0
        if not st.round_over:
            return
        self._round["penalties"] = engine.finish_round(st)
        if st.match_over:
            self.phase = "over"
            self.log["scores"] = list(st.scores)
            self.log["ranks"] = engine.ranks(st.scores)
            self.log["agent_seeds"] = list(self._agent_seeds)
            return
        self._deal()

    def _deal(self) -> None:
        st = self.state
        engine.deal_round(st, self.rng)
        self.starters = tuple(r[0] for r in st.rows)
        self._round = {
            "rows": [list(r) for r in st.rows],
            "hands": [list(h) for h in st.hands],
            "turns": [],
            "penalties": [],
        }
        self.log["rounds"].append(self._round)

    @property
    def over(self) -> bool:
        return self.phase == "over"

    def ranks(self) -> list[int]:
        return engine.ranks(self.state.scores)


# -- actions ----------------------------------------------------------------------------------
# The action numbers (cow006.rl.obs has the table): cards 0..103, rows 104..107, pass 108.
_ROW0 = 104
_PASS = 108


class IllegalActionError(ValueError):
    """An action the mask did not allow, in an environment made with ``illegal="raise"``."""


def _number(action: object) -> int | None:
    """The integer ``action`` is (an ``int``, a numpy integer), else None (a float, a text,
    None: whatever a caller sends is refused, never rounded)."""
    try:
        return operator.index(action)  # type: ignore[arg-type]  # anything: TypeError
    except TypeError:
        return None


def card_of(game: Game, seat: int, action: object, strict: bool) -> int:
    """The card ``action`` plays for ``seat``; an illegal one raises (``strict``) or is
    recorded as a fault and replaced by the runner's fallback, the lowest card."""
    a = _number(action)
    hand = game.hand(seat)
    if a is not None and 0 <= a < 104 and a + 1 in hand:
        return a + 1
    detail = f"seat {seat} chose action {action!r}, which plays no card of its hand"
    if strict:
        raise IllegalActionError(detail)
    game.fault(seat, FaultKind.BAD_TYPE if a is None else FaultKind.ILLEGAL_CARD, detail)
    return min(hand)


def row_of(game: Game, seat: int, action: object, strict: bool) -> int:
    """The row ``action`` takes for the row seat; an illegal one raises (``strict``) or is
    recorded as a fault and replaced by the runner's fallback, the cheapest row."""
    a = _number(action)
    if a is not None and _ROW0 <= a < _PASS:
        return a - _ROW0
    detail = f"seat {seat} chose action {action!r}, which takes no row (actions 104..107)"
    if strict:
        raise IllegalActionError(detail)
    game.fault(seat, FaultKind.BAD_TYPE if a is None else FaultKind.ILLEGAL_ROW, detail)
    return game.state.cheapest_row()


def place_reward(rank: int, n_players: int) -> float:
    """The ``reward="place"`` of a seat at the match's end: 1 first, -1 last, linear between
    (equal totals share a place)."""
    return 1.0 - 2.0 * (rank - 1) / (n_players - 1)
