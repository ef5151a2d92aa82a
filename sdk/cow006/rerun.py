"""A recorded match played again with one seat's bot deciding afresh: ``rerun``.

``rerun(log, seat, agent)`` plays the match of ``log`` once more: the same deals (the log's
seed, or its given deals), the same agent seeds and settings, ``agent`` in ``seat`` and, in
every other seat, the recorded player replaying its cards turn by turn.  It returns the new
log and the turns where ``agent``'s decision differs from the recorded one, with the heads it
took there instead.  ``cow006 rerun LOG|MATCH --seat S BOT`` is the command around it.

Where the counterfactual is exact, and where not:

* up to the first turn where a decision differs, everything is exact: the same table, views
  and seeds, so a deterministic bot (one whose randomness comes from ``MatchInfo.seed``)
  reproduces the recorded match card for card, and a changed bot is shown the very
  situation the old one was in;
* the other seats play their recorded cards whatever the table: a card is in its hand
  whatever anyone else does, but a real opponent might have played another one once the
  table changed.  After the first difference the rerun answers "what if the others had
  played as they did", not "what would they have done";
* a recorded seat whose card is below every row end chooses the recorded row if the table
  is the one it chose on (its recorded rule still applies), else the platform's fallback
  (the row of fewest heads, the lowest index on a tie);
* a match that lasts longer than the recorded one is dealt from the same seed, and the
  recorded seats play the fallback card (their lowest) in the rounds they never played;
* faults of the recorded seats are not re-enacted: their cards are replayed as played
  (a fallback card stays that card) and the new log records no fault for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ._agent import Agent
from ._errors import SetupError
from ._faults import fallback_card, fallback_row
from ._runner import Deal, play_match
from ._view import View
from .cards import heads_of
from .log import MatchLog, Round
from .log import verify as verify_log

__all__ = ["Difference", "RecordedSeat", "Rerun", "rerun"]


class RecordedSeat(Agent):
    """A seat of a recorded match: its recorded cards in order, its recorded row choices
    where the table is the one it chose on, the fallbacks elsewhere."""

    def __init__(self, log: Mapping[str, Any], seat: int) -> None:
        self.seat = seat
        self.rounds: list[Round] = list(log["rounds"])
        self.name = str(log["players"][seat]["agent"])
        self.replaced_rows = 0  # row choices whose recorded rule no longer applied

    def play(self, view: View) -> int:
        if view.round < len(self.rounds):
            return int(self.rounds[view.round]["turns"][view.turn]["cards"][self.seat])
        return fallback_card(view.hand)

    def take_row(self, view: View) -> int:
        recorded = recorded_row(self.rounds, view.round, view.turn, self.seat)
        if recorded is not None and view.rows == table_before(self.rounds, view.round, view.turn):
            return recorded
        self.replaced_rows += 1
        return fallback_row(view.rows)


@dataclass(frozen=True, slots=True)
class Difference:
    """A turn where the rerun seat decided otherwise than recorded (round, turn from 0).

    ``card``/``row`` are the new decisions, ``recorded_card``/``recorded_row`` the old ones
    (a row only for a card below every row end; None otherwise); ``heads`` and
    ``recorded_heads`` what the seat took that turn.  A turn of a round the recorded match
    never reached has ``recorded_card`` None.
    """

    round: int
    turn: int
    card: int
    recorded_card: int | None
    row: int | None
    recorded_row: int | None
    heads: int
    recorded_heads: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Rerun:
    """What ``rerun`` found: the new log, the differences, the seat's totals old and new."""

    def __init__(self, log: MatchLog, recorded: Mapping[str, Any], seat: int) -> None:
        self.log = log
        self.seat = seat
        self.differences = differences(recorded, log, seat)
        self.score = int(log["scores"][seat])
        self.rank = int(log["ranks"][seat])
        self.recorded_score = int(recorded["scores"][seat])
        self.recorded_rank = int(recorded["ranks"][seat])
        # True when the rerun is the recorded match, turn for turn (a deterministic bot
        # rerun as itself).
        self.same = _game(log) == _game(recorded)

    def as_dict(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "same": self.same,
            "score": self.score,
            "recorded_score": self.recorded_score,
            "rank": self.rank,
            "recorded_rank": self.recorded_rank,
            "differences": [d.as_dict() for d in self.differences],
        }


def _game(log: Mapping[str, Any]) -> tuple[Any, ...]:
    """What was played: the deals, the cards, takes and rows of each turn, the results."""
    return (log["rounds"], log["scores"], log["ranks"])


def table_before(rounds: Sequence[Round], r: int, t: int) -> tuple[tuple[int, ...], ...] | None:
    """The rows of round ``r`` before turn ``t`` as recorded (None past the recording)."""
    if r >= len(rounds) or t >= len(rounds[r]["turns"]):
        return None
    rows = rounds[r]["rows"] if t == 0 else rounds[r]["turns"][t - 1]["rows"]
    return tuple(tuple(row) for row in rows)


def recorded_row(rounds: Sequence[Round], r: int, t: int, seat: int) -> int | None:
    """The row ``seat`` chose in round ``r``, turn ``t`` for a card below every row end."""
    if r >= len(rounds) or t >= len(rounds[r]["turns"]):
        return None
    for take in rounds[r]["turns"][t]["takes"]:
        if take["seat"] == seat and take["reason"] == "lowest":
            return int(take["row"])
    return None


def _heads(turn: Mapping[str, Any], seat: int) -> int:
    return sum(heads_of(take["cards"]) for take in turn["takes"] if take["seat"] == seat)


def differences(recorded: Mapping[str, Any], new: Mapping[str, Any], seat: int) -> list[Difference]:
    """The turns of ``new`` where ``seat``'s card or row differs from ``recorded``'s."""
    out: list[Difference] = []
    old_rounds = recorded["rounds"]
    for r, rnd in enumerate(new["rounds"]):
        for t, turn in enumerate(rnd["turns"]):
            card = int(turn["cards"][seat])
            row = recorded_row(new["rounds"], r, t, seat)
            heads = _heads(turn, seat)
            if r >= len(old_rounds):
                out.append(Difference(r, t, card, None, row, None, heads, None))
                continue
            old_turn = old_rounds[r]["turns"][t]
            old_card = int(old_turn["cards"][seat])
            old_row = recorded_row(old_rounds, r, t, seat)
            if (card, row) != (old_card, old_row):
                out.append(
                    Difference(r, t, card, old_card, row, old_row, heads, _heads(old_turn, seat))
                )
    return out


def rerun(log: Mapping[str, Any], seat: int, agent: Agent) -> Rerun:
    """Play ``log``'s match again with ``agent`` in ``seat`` (see the module's docstring).

    ``log`` is verified first (a ``LogError`` names its first problem); ``agent`` is any
    agent ``play_match`` takes (an ``Agent``, a ``FunctionAgent``, a bot process).
    """
    verify_log(log)
    n = len(log["players"])
    if type(seat) is not int or not 0 <= seat < n:
        raise SetupError(f"this match has seats 0 to {n - 1}, not {seat!r}")
    agents: list[Agent] = [agent if s == seat else RecordedSeat(log, s) for s in range(n)]
    names = [str(p["agent"]) for p in log["players"]]
    names[seat] = str(getattr(agent, "name", None) or names[seat])
    given = int(log.get("given_deals") or 0)
    deals: list[Deal] = [(rnd["hands"], rnd["rows"]) for rnd in log["rounds"][:given]]
    new = play_match(
        agents,
        int(log["seed"]),
        names=names,
        deals=deals or None,
        settings=log.get("settings"),
        agent_seeds=log.get("agent_seeds"),
    )
    return Rerun(new, log, seat)
