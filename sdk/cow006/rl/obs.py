"""The action layout, the observation vector and the action mask (docs/rl.md).

Actions are one ``Discrete(109)``:

=========  ============================================================================
0..103     play card ``a + 1`` (play phase)
104..107   take row ``a - 104`` (row phase: only the seat whose card is below every end)
108        pass: the only legal action of a seat not asked in this phase (and after the
           match's end)
=========  ============================================================================

The observation is ``{"observation": float32[463], "action_mask": int8[109]}``.  The vector,
by offset (seats are rotated so that offset 0 of each seat block is the observing seat, then
the next seats in order; seats beyond ``n_players`` are 0):

=========  ======  ===========================================================================
offset     size    what
=========  ======  ===========================================================================
0          104     hand: 1 at ``card - 1`` for each card held
104        104     table: the cards in the rows now
208        104     seen: every card seen this round that is not in the hand (the rows, the
                   starters, every reveal, the current turn's cards)
312        104     current: the cards revealed this turn (row phase only; else 0)
416        12      rows, 3 per row (row index order): last card / 104, cards / 5, heads / 27
428        10      scores (totals of the finished rounds) / 66
438        10      penalties (heads taken this round) / 66
448        10      seats present (1 for each of the ``n_players`` seats)
458        5       turn / 10, min(round, 20) / 20, n_players / 10, row phase (1/0),
                   the card to place / 104 (row phase; else 0)
=========  ======  ===========================================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from .._view import View
from ..cards import DECK_SIZE, END_SCORE, HEADS, MAX_PLAYERS, N_ROWS, ROW_LIMIT

N_ACTIONS = DECK_SIZE + N_ROWS + 1  # 109
ROW0 = DECK_SIZE  # action of row 0
PASS = DECK_SIZE + N_ROWS  # 108

HAND = 0
TABLE = HAND + DECK_SIZE
SEEN = TABLE + DECK_SIZE
CURRENT = SEEN + DECK_SIZE
ROWS = CURRENT + DECK_SIZE
SCORES = ROWS + 3 * N_ROWS
PENALTIES = SCORES + MAX_PLAYERS
PRESENT = PENALTIES + MAX_PLAYERS
MISC = PRESENT + MAX_PLAYERS
N_OBS = MISC + 5  # 463

# The most heads a row can hold (5 cards: 55 and four of 11, 22, 33, 44...): the scale.
ROW_HEADS = 27
# Totals and penalties are / 66; a total before the last round is below 66 and a round takes
# at most every head of the deck (171), so they stay below this bound.
SCORE_HIGH = 4.0

_HIGH = np.ones(N_OBS, dtype=np.float32)
_HIGH[SCORES:PRESENT] = SCORE_HIGH


def observation_space() -> spaces.Dict:
    """The space of one seat's observation (the vector and the mask)."""
    return spaces.Dict(
        {
            "observation": spaces.Box(0.0, _HIGH, (N_OBS,), np.float32),
            "action_mask": spaces.Box(0, 1, (N_ACTIONS,), np.int8),
        }
    )


def action_space() -> spaces.Discrete:
    return spaces.Discrete(N_ACTIONS)


def encode(
    view: View, row_phase: bool, out: np.ndarray[Any, Any] | None = None
) -> np.ndarray[Any, Any]:
    """The observation vector of ``view`` (written into ``out`` if given, else a new array).

    ``row_phase``: the view is the row seat's in the row phase (``view.card`` set).
    """
    v = np.zeros(N_OBS, dtype=np.float32) if out is None else out
    if out is not None:
        v.fill(0.0)
    # The one-hot blocks as one list of indices and one numpy assignment (a call per block
    # costs more than the block: every step of every environment makes these).
    hand = view.hand
    rows = view.rows
    table = [c for r in rows for c in r]
    seen = set(table)
    seen.update(view.starters)
    for turn in view.revealed:
        seen.update(turn)
    current = view.current or ()
    seen.update(current)
    seen.difference_update(hand)
    ones = [HAND - 1 + c for c in hand]
    ones += [TABLE - 1 + c for c in table]
    ones += [SEEN - 1 + c for c in seen]
    ones += [CURRENT - 1 + c for c in current]
    v[ones] = 1.0
    features: list[float] = []
    for r in rows:
        features += (
            r[-1] / DECK_SIZE,
            len(r) / ROW_LIMIT,
            sum(map(HEADS.__getitem__, r)) / ROW_HEADS,
        )
    v[ROWS:SCORES] = features
    n = view.n_players
    seat = view.seat
    order = [*range(seat, n), *range(seat)]  # the observing seat first
    scores, penalties = view.scores, view.penalties
    v[SCORES : SCORES + n] = [min(scores[s] / END_SCORE, SCORE_HIGH) for s in order]
    v[PENALTIES : PENALTIES + n] = [min(penalties[s] / END_SCORE, SCORE_HIGH) for s in order]
    v[PRESENT : PRESENT + n] = 1.0
    v[MISC : MISC + 3] = (view.turn / 10, min(view.round, 20) / 20, n / MAX_PLAYERS)
    if row_phase:
        v[MISC + 3] = 1.0
        v[MISC + 4] = (view.card or 0) / DECK_SIZE
    return v


def mask(
    hand: list[int] | tuple[int, ...], asked: str, out: np.ndarray[Any, Any] | None = None
) -> np.ndarray[Any, Any]:
    """The legal actions: ``asked`` is ``"play"`` (a card of ``hand``), ``"row"`` (a row)
    or ``"pass"`` (not asked in this phase, or the match is over)."""
    m = np.zeros(N_ACTIONS, dtype=np.int8) if out is None else out
    if out is not None:
        m.fill(0)
    if asked == "play":
        m[np.asarray(hand, dtype=np.int64) - 1] = 1
    elif asked == "row":
        m[ROW0 : ROW0 + N_ROWS] = 1
    else:
        m[PASS] = 1
    return m


def describe(action: int) -> str:
    """A sentence for an action number (for errors and docs)."""
    if 0 <= action < DECK_SIZE:
        return f"play card {action + 1}"
    if ROW0 <= action < PASS:
        return f"take row {action - ROW0}"
    if action == PASS:
        return "pass"
    return f"action {action} (not one of 0..{N_ACTIONS - 1})"
