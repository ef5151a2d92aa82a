"""The ``cow006-match-1`` match log: its typed records, reading, writing and verifying.

The field names below are a published contract (add fields, never rename; docs/log-format.md):
format, seed, players[{seat, agent}], rounds[{rows, hands, turns[{cards, takes[{seat, row,
cards, reason}], rows}], penalties}], scores, ranks, faults[{seat, round, turn, kind, detail}],
forfeited, agent_seeds.  The TypedDicts here spell that contract for a type checker; a log is
a plain ``dict`` (the JSON object) at run time.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

from . import engine
from ._checks import expect, integer, need
from ._errors import LogError
from ._faults import FAULT_KINDS
from ._faults import FaultKind as FaultKind  # a fault's kind, part of the log's contract
from .cards import HAND_SIZE
from .replay import Deal, Placement, RoundEnd, n_players, steps, takes_of

FORMAT = "cow006-match-1"

# Why a row was taken: a card had to be its 6th, or a card below every row end chose it.
TakeReason = Literal["sixth", "lowest"]


class Take(TypedDict):
    """A row taken by a seat: its index, its cards (oldest first) and why."""

    seat: int
    row: int
    cards: list[int]
    reason: TakeReason


class Turn(TypedDict):
    """One turn: the card of each seat, the takes in resolution order, the rows after it."""

    cards: list[int]
    takes: list[Take]
    rows: list[list[int]]


class Round(TypedDict):
    """One round: the 4 row starters and the hands as dealt, 10 turns, heads taken per seat."""

    rows: list[list[int]]
    hands: list[list[int]]
    turns: list[Turn]
    penalties: list[int]


class Player(TypedDict):
    seat: int
    agent: str


class Fault(TypedDict):
    """A fault of a seat (``kind``: one of ``cow006._faults.FaultKind``), 0-based round/turn."""

    seat: int
    round: int
    turn: int
    kind: str
    detail: str


class MatchLog(TypedDict):
    """A whole match log (docs/log-format.md)."""

    format: str
    seed: int
    players: list[Player]
    rounds: list[Round]
    scores: list[int]
    ranks: list[int]
    faults: list[Fault]
    forfeited: list[int]
    agent_seeds: NotRequired[list[int]]  # written once the match is over (older logs lack it)
    settings: NotRequired[dict[str, Any]]
    given_deals: NotRequired[int]  # the first rounds had explicit deals (tests)
    sandbox: NotRequired[dict[str, Any] | bool]  # what isolated the bot processes


def dumps(log: Mapping[str, Any]) -> str:
    return json.dumps(log, separators=(",", ":"))


def write(log: Mapping[str, Any], path: str | Path) -> None:
    Path(path).write_text(dumps(log) + "\n", encoding="utf-8")


def read(path: str | Path) -> dict[str, Any]:
    """Load a log file; LogError if it is missing or not a JSON object."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LogError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LogError(f"{path}: cannot read it ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LogError(f"{path}: not JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise LogError(f"{path}: not a match log (JSON nested too deep)") from None
    if not isinstance(data, dict):
        raise LogError(f"{path}: a match log is a JSON object")
    return data


def verify(log: Any) -> None:
    """Replay a log (``cow006.replay.steps``) and raise LogError at its first inconsistency.

    Everything the log records is compared with the replay: every take and the rows after
    every turn, the penalties, scores and ranks.  Beyond the replay: every number the format
    gives as an integer is a JSON integer (not 5.0, not true), and every round's deal is the
    one the seed gives, from round ``given_deals`` on (0 unless the runner was handed explicit
    deals for its first rounds).
    """
    need(isinstance(log, dict), "log", "a match log is a JSON object")
    need(log.get("format") == FORMAT, "format", f"expected {FORMAT!r}, found {log.get('format')!r}")
    seed = integer(log.get("seed"), "seed")
    # Rounds from ``given_deals`` on were dealt from the seed (a runner given explicit deals
    # for its first rounds, in tests, says how many): each must be the seed's next deal.
    given = log.get("given_deals", 0)
    need(type(given) is int and given >= 0, "given_deals", "expected a non-negative integer")
    deals = random.Random(seed)
    n = n_players(log)
    placed: list[Placement] = []  # the placements of the turn being replayed
    scores: tuple[int, ...] = ()
    for step in steps(log):
        if type(step) is Placement:
            placed.append(step)
            if step.nth < n:
                continue
            # The turn's last card is placed: its takes and the rows after it.
            where = f"rounds[{step.round}].turns[{step.turn}]"
            turn = log["rounds"][step.round]["turns"][step.turn]
            expect(turn["takes"], takes_of(placed), f"{where}.takes")
            expect(turn.get("rows"), [list(r) for r in step.rows], f"{where}.rows")
            placed.clear()
        elif type(step) is Deal:
            if step.round >= given:
                rnd = log["rounds"][step.round]
                hands, rows = engine.deal(deals, n)
                need(
                    rnd["hands"] == hands and rnd["rows"] == rows,
                    f"rounds[{step.round}]",
                    f"the deal is not the one the seed {seed} gives for this round",
                )
        elif type(step) is RoundEnd:
            where = f"rounds[{step.round}].penalties"
            expect(log["rounds"][step.round].get("penalties"), list(step.penalties), where)
            scores = step.scores
    expect(log.get("scores"), list(scores), "scores")
    expect(log.get("ranks"), engine.ranks(scores), "ranks")
    _verify_faults(log, n, len(log["rounds"]))
    if "agent_seeds" in log:  # written at the match's end (logs from before lack it)
        seeds = log["agent_seeds"]
        need(
            isinstance(seeds, list) and len(seeds) == n,
            "agent_seeds",
            f"expected {n} seeds, one per seat",
        )
        for i, s in enumerate(seeds):
            integer(s, f"agent_seeds[{i}]")
            need(0 <= s < 2**63, f"agent_seeds[{i}]", "a seed is in 0 .. 2**63 - 1")
    forfeited = log.get("forfeited", [])
    need(
        isinstance(forfeited, list)
        and all(type(s) is int and 0 <= s < n for s in forfeited)
        and len(set(forfeited)) == len(forfeited),
        "forfeited",
        "expected distinct seats",
    )


def _verify_faults(log: Mapping[str, Any], n: int, n_rounds: int) -> None:
    faults = log.get("faults", [])
    need(isinstance(faults, list), "faults", "expected a list")
    for i, f in enumerate(faults):
        need(
            isinstance(f, dict) and type(f.get("seat")) is int and 0 <= f["seat"] < n,
            f"faults[{i}]",
            "expected an object with a valid seat",
        )
        need(f.get("kind") in FAULT_KINDS, f"faults[{i}]", f"unknown fault kind {f.get('kind')!r}")
        need(
            type(f.get("round")) is int and 0 <= f["round"] < n_rounds,
            f"faults[{i}]",
            "round out of range",
        )
        need(
            type(f.get("turn")) is int and 0 <= f["turn"] <= HAND_SIZE,
            f"faults[{i}]",
            "turn out of range",
        )
