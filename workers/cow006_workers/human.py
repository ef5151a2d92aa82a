"""A person's seat at a match against the bots: an agent that asks through the database.

``HumanSeat`` sits at the person's seat of a ``play`` match (``cow006_platform.crud.plays``)
in place of a bot process.  Asked for a card or a row, it writes the decision to the match's
``plays`` row (the seat's view, what is asked, a new decision number, the deadline) and polls
the row until the person's answer to that number is there (the API writes it,
``crud.plays.answer``, checked against the view) or ``PLAY_DECISION_SECONDS`` have passed.
No answer in time is a ``timeout`` fault, as for a bot: the runner plays the fallback, and a
seat with three faults forfeits (the fallback plays the rest of its match).

The runner checks every answer as it checks a bot's: the worker trusts the database no more
than a bot.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from cow006 import Agent, BotFault, View
from cow006_platform import locks
from cow006_platform.db import session_scope
from cow006_platform.models import Play, utcnow

POLL_SECONDS = 0.25  # between two reads of the answer: a person hardly notices it


class HumanSeat(Agent):
    """The seat of the person of play ``play_id``, answering through the database."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        play_id: int,
        seconds: float,
        *,
        poll: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.session_factory = session_factory
        self.play_id = play_id
        self.seconds = seconds
        self.poll = POLL_SECONDS if poll is None else poll
        self.clock = clock
        self.sleep = sleep
        self.stopped = False  # set by ``stop``: the match is being abandoned

    def play(self, view: View) -> int:
        return self._ask("card", view)

    def take_row(self, view: View) -> int:
        return self._ask("row", view)

    def on_match_end(self, result: dict[str, Any]) -> None:
        self._clear()

    def forfeit(self) -> None:
        """The runner gave up on the seat (three faults): nothing is asked any more."""
        self._clear()

    def stop(self) -> None:
        """Stop waiting (the worker lost the match's lease): the next poll gives up."""
        self.stopped = True

    def _ask(self, asked: str, view: View) -> int:
        with session_scope(self.session_factory) as session:
            play = locks.lock(session, Play, self.play_id)
            if play is None:
                raise BotFault("crash", "the match against the bots is gone")
            play.decision = (play.decision or 0) + 1
            play.asked = asked
            play.pending = {**view.to_dict(), "asked": asked}
            play.answer = None
            play.deadline = utcnow() + timedelta(seconds=self.seconds)
            number = play.decision
        end = self.clock() + self.seconds
        while not self.stopped:
            got = self._answer(number)
            if got is not None:
                return got
            if self.clock() >= end:
                break
            self.sleep(self.poll)
        # The deadline passed: one last look under the lock, so an answer that came in just
        # now is played rather than lost, then the decision is closed either way.
        with session_scope(self.session_factory) as session:
            play = locks.lock(session, Play, self.play_id)
            late = play.answer if play is not None and play.decision == number else None
            if play is not None:
                play.asked = None
                play.pending = None
                play.deadline = None
                if late is None:
                    play.missed = (play.missed or 0) + 1
        if late is not None:
            return int(late)
        raise BotFault("timeout", f"no move within {self.seconds:g} s")

    def _answer(self, number: int) -> int | None:
        # A plain read while nothing has come (no write lock taken four times a second).
        with session_scope(self.session_factory) as session:
            play = session.get(Play, self.play_id)
            if play is None or play.decision != number or play.answer is None:
                return None
        with session_scope(self.session_factory) as session:
            play = locks.lock(session, Play, self.play_id)
            if play is None or play.decision != number or play.answer is None:
                return None
            got = int(play.answer)
            play.asked = None
            play.pending = None
            play.deadline = None
            return got

    def _clear(self) -> None:
        with session_scope(self.session_factory) as session:
            play = locks.lock(session, Play, self.play_id)
            if play is not None:
                play.asked = None
                play.pending = None
                play.deadline = None
