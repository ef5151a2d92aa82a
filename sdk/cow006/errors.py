"""Typed errors: illegal decisions raised by the engine, bad logs and bad agent specs."""

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
