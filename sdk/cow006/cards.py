"""The deck: card numbers, bull heads and the constants of the table."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # the bot side imports no ``collections`` (docs/sandbox.md, Start-up)
    from collections.abc import Iterable

DECK_SIZE = 104
HAND_SIZE = 10
N_ROWS = 4
ROW_LIMIT = 5  # a card that would become the 6th in a row takes the five
END_SCORE = 66  # the match ends after the round in which a total reaches this
MIN_PLAYERS = 2
MAX_PLAYERS = 10
CARDS = range(1, DECK_SIZE + 1)


def _heads(card: int) -> int:
    if card == 55:
        return 7
    if card % 11 == 0:
        return 5
    if card % 10 == 0:
        return 3
    if card % 5 == 0:
        return 2
    return 1


# HEADS[c] is the number of bull heads on card c; index 0 is unused.
HEADS: tuple[int, ...] = (0, *(_heads(c) for c in CARDS))
TOTAL_HEADS = sum(HEADS)


def heads(card: int) -> int:
    """Bull heads on one card (1..104)."""
    return HEADS[card]


def heads_of(cards: Iterable[int]) -> int:
    """Bull heads on a group of cards: a row, a penalty pile."""
    return sum(map(HEADS.__getitem__, cards))
