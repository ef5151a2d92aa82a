"""The ``cow006-match-1`` match log: reading, writing and verifying by replay.

The field names below are a published contract (add fields, never rename):
format, seed, players[{seat, agent}], rounds[{rows, hands, turns[{cards, takes[{seat, row,
cards, reason}], rows}], penalties}], scores, ranks, faults[{seat, round, turn, kind, detail}].
"""

from __future__ import annotations

import json
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


def iter_turns(log: dict[str, Any]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    for r, rnd in enumerate(log.get("rounds", [])):
        for t, turn in enumerate(rnd.get("turns", [])):
            yield r, t, turn


def verify(log: Any) -> None:
    """Replay a log from its deals and decisions; raise LogError at the first inconsistency."""
    _need(isinstance(log, dict), "log", "a match log is a JSON object")
    _need(
        log.get("format") == FORMAT, "format", f"expected {FORMAT!r}, found {log.get('format')!r}"
    )
    _need(type(log.get("seed")) is int, "seed", "expected an integer")
    players = log.get("players")
    _need(isinstance(players, list), "players", "expected a list")
    n = len(players)
    _need(2 <= n <= 10, "players", f"a match has 2 to 10 players, found {n}")
    for i, p in enumerate(players):
        _need(isinstance(p, dict) and p.get("seat") == i, f"players[{i}]", "seat out of order")
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
        turns = rnd.get("turns")
        _need(
            isinstance(turns, list) and len(turns) == HAND_SIZE,
            f"{where}.turns",
            "expected 10 turns",
        )
        for t, turn in enumerate(turns):
            _verify_turn(state, turn, f"{where}.turns[{t}]")
        penalties = engine.finish_round(state)
        _need(
            rnd.get("penalties") == penalties,
            f"{where}.penalties",
            f"expected {penalties}, found {rnd.get('penalties')}",
        )
    _need(state.match_over, "rounds", f"the match ended before any total reached {END_SCORE}")
    _need(
        log.get("scores") == state.scores,
        "scores",
        f"expected {state.scores}, found {log.get('scores')}",
    )
    expected_ranks = engine.ranks(state.scores)
    _need(
        log.get("ranks") == expected_ranks,
        "ranks",
        f"expected {expected_ranks}, found {log.get('ranks')}",
    )
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
    _need(takes == replayed, f"{where}.takes", f"expected {replayed}, found {takes}")
    _need(
        turn.get("rows") == state.rows,
        f"{where}.rows",
        f"expected {state.rows}, found {turn.get('rows')}",
    )
