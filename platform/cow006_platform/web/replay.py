"""The match page's replay: a log's steps (``cow006.replay.steps``) as the page shows them.

The server replays the log once, with the SDK's stepper, and the page only draws the result:
``viewer`` is the JSON data block that ``replay.js`` steps through (it holds no game rule),
``turns`` the turn-by-turn text view that needs no JavaScript.  Both come from the same pass
over the steps, so they cannot disagree.

The viewer's data: ``names`` (the players, by seat) and ``rounds``, each a list of turns;
a turn has ``cards`` (by seat), ``order`` (the seats in placing order) and ``steps``: step 0
is the reveal (the rows before the turn), step k the rows after the k-th lowest card is placed,
with that card's ``seat``, ``card`` and ``row`` and its ``take`` (``seat``, ``row``, ``cards``,
``reason``, ``heads``, and for a "lowest" take ``costs``, the heads of every row when the
player chose) or null.  Every step carries ``pen`` (heads taken this round, by seat) and
``totals`` (the running totals).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cow006 import LogError
from cow006.replay import Deal, Placement, Reveal, RoundEnd, Taken, n_players, steps


def _take(take: Taken | None) -> dict[str, Any] | None:
    if take is None:
        return None
    out: dict[str, Any] = {
        "seat": take.seat,
        "row": take.row,
        "cards": list(take.cards),
        "reason": take.reason,
        "heads": take.heads,
    }
    if take.costs is not None:
        out["costs"] = list(take.costs)
    return out


def _totals(before: Sequence[int], pen: Sequence[int]) -> list[int]:
    return [b + p for b, p in zip(before, pen, strict=True)]


def replay_data(log: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the viewer's data, the text view's rounds) of a verified log; LogError if it is not
    one that replays."""
    n_players(log)  # LogError unless the players are well formed
    names = [p["agent"] for p in log["players"]]
    viewer: dict[str, Any] = {"names": names, "rounds": []}
    text: list[dict[str, Any]] = []
    before: Sequence[int] = ()
    turns: list[dict[str, Any]] = []
    rows_text: list[dict[str, Any]] = []
    turn: dict[str, Any] = {}
    line: dict[str, Any] = {}
    for step in steps(log):
        if type(step) is Deal:
            before = step.scores
            turns, rows_text = [], []
            viewer["rounds"].append({"turns": turns})
            text.append({"number": step.round + 1, "rows": step.rows, "turns": rows_text})
        elif type(step) is Reveal:
            reveal = {
                "rows": step.rows,
                "pen": step.penalties,
                "totals": _totals(before, step.penalties),
            }
            turn = {"cards": step.cards, "order": step.order, "steps": [reveal]}
            turns.append(turn)
            line = {"number": step.turn + 1, "cards": step.cards, "takes": [], "rows": ()}
            rows_text.append(line)
        elif type(step) is Placement:
            turn["steps"].append(
                {
                    "seat": step.seat,
                    "card": step.card,
                    "row": step.row,
                    "take": _take(step.take),
                    "rows": step.rows,
                    "pen": step.penalties,
                    "totals": _totals(before, step.penalties),
                }
            )
            if step.take is not None:
                take = step.take
                line["takes"].append(
                    {
                        "player": names[take.seat],
                        "row": take.row + 1,
                        "cards": take.cards,
                        "heads": take.heads,
                        "reason": take.reason,
                    }
                )
            line["rows"] = step.rows
        elif type(step) is RoundEnd:
            text[-1]["penalties"] = step.penalties
            text[-1]["totals"] = step.scores
    return viewer, text


def replay_of(
    log: Mapping[str, Any] | None,
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], str | None]:
    """(viewer data, text rounds, why it does not replay) of a match page's log, if any.

    A stored log was verified when its match finished, so the last is None unless the
    stored log is damaged: the page then says so instead of a replay.
    """
    if log is None:
        return None, [], None
    try:
        viewer, text = replay_data(log)
    except LogError as exc:
        return None, [], str(exc)
    return viewer, text, None
