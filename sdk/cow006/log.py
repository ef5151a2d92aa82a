"""The ``cow006-match-1`` match log: reading, writing and verifying by replay.

The field names below are a published contract (add fields, never rename):
format, seed, players[{seat, agent}], rounds[{rows, hands, turns[{cards, takes[{seat, row,
cards, reason}], rows}], penalties}], scores, ranks, faults[{seat, round, turn, kind, detail}].
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import engine
from .cards import DECK_SIZE, END_SCORE, HAND_SIZE, N_ROWS
from .errors import Cow006Error, LogError
from .faults import FAULT_KINDS

FORMAT = "cow006-match-1"


def dumps(log: dict[str, Any]) -> str:
    return json.dumps(log, separators=(",", ":"))


def write(log: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(json.dumps(log, separators=(",", ":")) + "\n", encoding="utf-8")


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


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise LogError(f"{where}: {what}")


def _int_list(value: Any, where: str, length: int | None = None) -> list[int]:
    _need(isinstance(value, list), where, "expected a list")
    for v in value:
        _need(type(v) is int, where, f"expected integers, found {v!r}")
    if length is not None:
        _need(len(value) == length, where, f"expected {length} entries, found {len(value)}")
    return value


def _show(value: Any) -> str:
    """A value as the log spells it (JSON: ``5.0``, ``true``)."""
    try:
        return json.dumps(value)[:80]
    except (TypeError, ValueError):
        return repr(value)[:80]


def _non_integer(value: Any) -> Any:
    """The first number in ``value`` (lists and objects walked) that is not a JSON integer
    (a float, or a bool: Python compares 5.0 and True equal to 5 and 1), else None."""
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, int | float) and type(v) is not int:  # bool is an int subclass
            return v
        if isinstance(v, list):
            todo.extend(reversed(v))
        elif isinstance(v, dict):
            todo.extend(reversed(list(v.values())))
    return None


def _same(found: Any, expected: Any) -> bool:
    """``found == expected`` with JSON types kept apart (5.0 and true are not 5 and 1)."""
    if type(found) is not type(expected):
        return False
    if isinstance(expected, list):
        return len(found) == len(expected) and all(map(_same, found, expected))
    if isinstance(expected, dict):
        return found.keys() == expected.keys() and all(
            _same(found[k], v) for k, v in expected.items()
        )
    return bool(found == expected)


def _expect(found: Any, expected: Any, where: str) -> None:
    """LogError unless ``found`` is exactly ``expected``: a number of the wrong JSON type
    is named as such, anything else as expected-versus-found."""
    if _same(found, expected):
        return
    if found == expected:
        bad = _non_integer(found)
        raise LogError(f"{where}: {_show(bad)} where the format has an integer")
    raise LogError(f"{where}: expected {expected}, found {found}")


def _integer(value: Any, where: str, what: str = "expected an integer") -> int:
    if type(value) is not int:
        found = f", found {_show(value)}" if isinstance(value, bool | float) else ""
        raise LogError(f"{where}: {what}{found}")
    return value


def iter_turns(log: dict[str, Any]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    for r, rnd in enumerate(log.get("rounds", [])):
        for t, turn in enumerate(rnd.get("turns", [])):
            yield r, t, turn


def verify(log: Any) -> None:
    """Replay a log from its deals and decisions; raise LogError at the first inconsistency.

    Beyond the replay: every number the format gives as an integer is a JSON integer (not
    5.0, not true), and every round's deal is the one the seed gives, from round
    ``given_deals`` on (0 unless the runner was handed explicit deals for its first rounds).
    """
    _need(isinstance(log, dict), "log", "a match log is a JSON object")
    _need(
        log.get("format") == FORMAT, "format", f"expected {FORMAT!r}, found {log.get('format')!r}"
    )
    seed = _integer(log.get("seed"), "seed")
    # Rounds from ``given_deals`` on were dealt from the seed (a runner given explicit deals
    # for its first rounds, in tests, says how many): each must be the seed's next deal.
    given = log.get("given_deals", 0)
    _need(type(given) is int and given >= 0, "given_deals", "expected a non-negative integer")
    deals = random.Random(seed)
    players = log.get("players")
    _need(isinstance(players, list), "players", "expected a list")
    n = len(players)
    _need(2 <= n <= 10, "players", f"a match has 2 to 10 players, found {n}")
    for i, p in enumerate(players):
        _need(isinstance(p, dict), f"players[{i}]", "expected an object")
        _integer(p.get("seat"), f"players[{i}].seat")
        _need(p.get("seat") == i, f"players[{i}]", "seat out of order")
        _need(isinstance(p.get("agent"), str), f"players[{i}]", "agent must be a string")
    rounds = log.get("rounds")
    _need(isinstance(rounds, list) and rounds, "rounds", "expected a non-empty list")
    state = engine.new_match(n)
    for r, rnd in enumerate(rounds):
        where = f"rounds[{r}]"
        _need(isinstance(rnd, dict), where, "expected an object")
        _need(
            not state.match_over, where, f"the match should have ended: a total reached {END_SCORE}"
        )
        rows = rnd.get("rows")
        hands = rnd.get("hands")
        _need(isinstance(rows, list) and len(rows) == N_ROWS, f"{where}.rows", "expected 4 rows")
        for i, row in enumerate(rows):
            _int_list(row, f"{where}.rows[{i}]", 1)
        _need(isinstance(hands, list) and len(hands) == n, f"{where}.hands", f"expected {n} hands")
        for s, hand in enumerate(hands):
            _int_list(hand, f"{where}.hands[{s}]", HAND_SIZE)
        try:
            engine.start_round(state, hands, rows)
        except Cow006Error as exc:
            raise LogError(f"{where}: {exc}") from None
        if r >= given:
            dealt_hands, dealt_rows = engine.deal(deals, n)
            _need(
                hands == dealt_hands and rows == dealt_rows,
                where,
                f"the deal is not the one the seed {seed} gives for this round",
            )
        turns = rnd.get("turns")
        _need(
            isinstance(turns, list) and len(turns) == HAND_SIZE,
            f"{where}.turns",
            "expected 10 turns",
        )
        for t, turn in enumerate(turns):
            _verify_turn(state, turn, f"{where}.turns[{t}]")
        penalties = engine.finish_round(state)
        _expect(rnd.get("penalties"), penalties, f"{where}.penalties")
    _need(state.match_over, "rounds", f"the match ended before any total reached {END_SCORE}")
    _expect(log.get("scores"), state.scores, "scores")
    _expect(log.get("ranks"), engine.ranks(state.scores), "ranks")
    faults = log.get("faults", [])
    _need(isinstance(faults, list), "faults", "expected a list")
    for i, f in enumerate(faults):
        _need(
            isinstance(f, dict) and type(f.get("seat")) is int and 0 <= f["seat"] < n,
            f"faults[{i}]",
            "expected an object with a valid seat",
        )
        _need(f.get("kind") in FAULT_KINDS, f"faults[{i}]", f"unknown fault kind {f.get('kind')!r}")
        _need(
            type(f.get("round")) is int and 0 <= f["round"] < len(rounds),
            f"faults[{i}]",
            "round out of range",
        )
        _need(
            type(f.get("turn")) is int and 0 <= f["turn"] <= HAND_SIZE,
            f"faults[{i}]",
            "turn out of range",
        )
    if "agent_seeds" in log:  # written at the match's end (logs from before lack it)
        seeds = log["agent_seeds"]
        _need(
            isinstance(seeds, list) and len(seeds) == n,
            "agent_seeds",
            f"expected {n} seeds, one per seat",
        )
        for i, s in enumerate(seeds):
            _integer(s, f"agent_seeds[{i}]")
            _need(0 <= s < 2**63, f"agent_seeds[{i}]", "a seed is in 0 .. 2**63 - 1")
    forfeited = log.get("forfeited", [])
    _need(
        isinstance(forfeited, list)
        and all(type(s) is int and 0 <= s < n for s in forfeited)
        and len(set(forfeited)) == len(forfeited),
        "forfeited",
        "expected distinct seats",
    )


def _verify_turn(state: engine.State, turn: Any, where: str) -> None:
    _need(isinstance(turn, dict), where, "expected an object")
    cards = _int_list(turn.get("cards"), f"{where}.cards", state.n_players)
    for c in cards:
        _need(1 <= c <= DECK_SIZE, f"{where}.cards", f"{c} is not a card")
    takes = turn.get("takes")
    _need(isinstance(takes, list), f"{where}.takes", "expected a list")
    choices = {}
    for i, tk in enumerate(takes):
        _need(isinstance(tk, dict), f"{where}.takes[{i}]", "expected an object")
        if tk.get("reason") == "lowest":
            choices[tk.get("seat")] = tk.get("row")

    def choose_row(seat: int, card: int) -> int:
        if seat not in choices:
            raise LogError(
                f"{where}: card {card} of seat {seat} is below every row end, "
                "but no 'lowest' take records its row"
            )
        return choices[seat]

    try:
        replayed = engine.play_turn(state, cards, choose_row)
    except LogError:
        raise
    except Cow006Error as exc:
        raise LogError(f"{where}: {exc}") from None
    _expect(takes, replayed, f"{where}.takes")
    _expect(turn.get("rows"), state.rows, f"{where}.rows")
