"""Faults: what a bot can do wrong, and the deterministic fallbacks played in its place.

Host side only: a bot process never imports this module (``enum`` alone would cost its
start-up about 3 ms).  ``BotFault``, which the protocol raises, is in ``cow006._errors`` and
re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from ._errors import BotFault
from .engine import cheapest_row


class FaultKind(StrEnum):
    """Every kind of fault a match log can record; the log and the API spell them so."""

    TIMEOUT = "timeout"  # no reply before the decision deadline and the time bank ran out
    STARTUP = "startup"  # the bot process did not start and say hello before the deadline
    MALFORMED_JSON = "malformed_json"  # a reply line that is not JSON (or not a JSON object)
    NESTED_JSON = "nested_json"  # a reply nested deeper than the protocol allows
    NAN = "nan"  # NaN or an infinity where a number belongs
    BAD_TYPE = "bad_type"  # a reply of the wrong shape: `true` or "12" where a number belongs
    ILLEGAL_CARD = "illegal_card"  # a card that is not in the seat's hand
    ILLEGAL_ROW = "illegal_row"  # a row outside 0..3
    UNREQUESTED = "unrequested"  # output not asked for: a line before a request, a 2nd reply
    OVERSIZE = "oversize"  # a reply line longer than the size cap
    CRASH = "crash"  # the bot process exited or closed its output
    EXCEPTION = "exception"  # an in-process agent raised an exception


# Every fault kind, as the strings they are equal to ("timeout" in FAULT_KINDS).
FAULT_KINDS: tuple[FaultKind, ...] = tuple(FaultKind)
# Faults after which the bot cannot be trusted to go on: its seat is forfeited at once.
FATAL_KINDS = frozenset({FaultKind.CRASH, FaultKind.STARTUP, FaultKind.OVERSIZE})
# A seat is forfeited after this many faults in one match.
MAX_FAULTS = 3
# Characters of a fault's detail kept (the rest is cut with a marker).
MAX_DETAIL = 500

__all__ = [
    "FATAL_KINDS",
    "FAULT_KINDS",
    "MAX_DETAIL",
    "MAX_FAULTS",
    "BotFault",
    "FaultKind",
    "fallback_card",
    "fallback_row",
]


def fallback_card(hand: Sequence[int]) -> int:
    """The card played for a faulted or forfeited seat: its lowest."""
    return min(hand)


def fallback_row(rows: Sequence[Sequence[int]]) -> int:
    """The row taken for a faulted or forfeited seat: fewest heads, then fewest cards,
    then the lowest index."""
    return cheapest_row(rows)
