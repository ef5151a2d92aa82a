"""Typed errors: illegal decisions raised by the engine, bad logs, bad agent specs and the
faults of bots."""

from __future__ import annotations


class Cow006Error(Exception):
    """Base class of every error this package raises on purpose."""


class IllegalMoveError(Cow006Error, ValueError):
    """A decision that the rules do not allow; the runner turns it into a fault."""

    kind = "illegal"

    def __init__(self, message: str, *, seat: int | None = None) -> None:
        super().__init__(message)
        self.seat = seat


class CardNotInHandError(IllegalMoveError):
    """The played card is not an int that is in the seat's hand."""

    kind = "illegal_card"


class InvalidRowError(IllegalMoveError):
    """The chosen row is not an int in 0..3."""

    kind = "illegal_row"


class SetupError(Cow006Error, ValueError):
    """An impossible table: wrong number of players, a bad explicit deal or position."""


class LogError(Cow006Error, ValueError):
    """A match log that is malformed or inconsistent with the rules."""


class AgentLoadError(Cow006Error):
    """An agent spec that cannot be turned into an agent (missing file, import error, ...)."""


class BotFault(Exception):
    """A decision that could not be had from a bot; the runner records it and falls back.

    ``kind`` is one of ``cow006._faults.FaultKind`` (a string equal to it is accepted).
    """

    def __init__(self, kind: str, detail: str = "") -> None:
        # Imported here: a bot process imports this module but never makes a BotFault (the
        # host does), and must not pay for ``enum`` and ``re`` at start-up.
        from ._faults import FAULT_KINDS, MAX_DETAIL, FaultKind
        from .untrusted import clean

        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}")
        # A detail often quotes the bot (its error reply, its start-up message): bot text is
        # cleaned where it enters, so no NUL or lone surrogate reaches a log or a database.
        detail = clean(detail, MAX_DETAIL)
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = FaultKind(kind)
        self.detail = detail

    @property
    def fatal(self) -> bool:
        from ._faults import FATAL_KINDS

        return self.kind in FATAL_KINDS
