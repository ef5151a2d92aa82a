"""Faults: what a bot can do wrong, and the deterministic fallbacks played in its place."""

from __future__ import annotations

from collections.abc import Sequence

from .engine import cheapest_row
from .untrusted import clean

# Every kind of fault a match log can record.
FAULT_KINDS = (
    "timeout",  # no reply before the decision deadline and the time bank ran out
    "startup",  # the bot process did not start and say hello before the startup deadline
    "malformed_json",  # a reply line that is not JSON (or not a JSON object)
    "nested_json",  # a reply nested deeper than the protocol allows
    "nan",  # NaN or an infinity where a number belongs
    "bad_type",  # a reply of the wrong shape: `true` or "12" where a number belongs
    "illegal_card",  # a card that is not in the seat's hand
    "illegal_row",  # a row outside 0..3
    "unrequested",  # extra or unrequested output: a line before being asked, a second reply
    "oversize",  # a reply line longer than the size cap
    "crash",  # the bot process exited or closed its output
    "exception",  # an in-process agent raised an exception
)
# Faults after which the bot cannot be trusted to go on: its seat is forfeited at once.
FATAL_KINDS = frozenset({"crash", "startup", "oversize"})
# A seat is forfeited after this many faults in one match.
MAX_FAULTS = 3
# Characters of a fault's detail kept (the rest is cut with a marker).
MAX_DETAIL = 500


class BotFault(Exception):
    """A decision that could not be had from a bot; the runner records it and falls back."""

    def __init__(self, kind: str, detail: str = "") -> None:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}")
        # A detail often quotes the bot (its error reply, its start-up message): bot text is
        # cleaned where it enters, so no NUL or lone surrogate reaches a log or a database.
        detail = clean(detail, MAX_DETAIL)
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail

    @property
    def fatal(self) -> bool:
        return self.kind in FATAL_KINDS


def fallback_card(hand: Sequence[int]) -> int:
    """The card played for a faulted or forfeited seat: its lowest."""
    return min(hand)


def fallback_row(rows: Sequence[Sequence[int]]) -> int:
    """The row taken for a faulted or forfeited seat: fewest heads, then fewest cards,
    then the lowest index."""
    return cheapest_row(rows)
