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

What a player reads beside the board is worked out here too, from the log alone: each round's
``hands`` (as dealt, by seat) and ``winners`` (the seats with the fewest heads that round);
each turn's ``faults`` (``seat``, ``kind``, ``detail``, and ``fallback``: "card" when the card
that seat played is the lowest of its hand, the fallback a fault puts in its place, "row" for a
row chosen for it, "decision" when the log cannot tell which, "none" when its card was its own
and it chose no row) and ``forfeited`` (the seats
already forfeited, whose every decision is a fallback); a round's ``late_faults`` (faults in
its end-of-round notice, turn 10 in the log); and the match's ``winners`` (rank 1).  The text
view carries the same: row heads and full rows after each turn, faults on their turn, the
cost of every row for a "lowest" take, round and match winners.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cow006 import LogError
from cow006.cards import ROW_LIMIT, heads_of
from cow006.log import FaultKind
from cow006.replay import Deal, Placement, Reveal, RoundEnd, Taken, n_players, steps

# docs/log-format.md: after 3 faults, or at once after one of these, a seat is forfeited.
FORFEIT_AFTER = 3
FATAL = frozenset({FaultKind.CRASH, FaultKind.STARTUP, FaultKind.OVERSIZE})
# A fault's detail is the bot's words (cleaned and capped when the log was written): the page
# shows its start only.
DETAIL_SHOWN = 300
# What a fault's fallback replaced, as the text view says it.
FALLBACK_TEXT = {
    "card": "fallback card",
    "row": "fallback row",
    "decision": "fallback card or row",
    "none": "its card was its own",
}


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


def _least(values: Sequence[int]) -> list[int]:
    """The indices holding the smallest value (every one of a tie)."""
    low = min(values)
    return [i for i, v in enumerate(values) if v == low]


def _faults_by_turn(log: Mapping[str, Any]) -> dict[tuple[int, int], list[Mapping[str, Any]]]:
    by_turn: dict[tuple[int, int], list[Mapping[str, Any]]] = {}
    for fault in log.get("faults") or ():
        by_turn.setdefault((fault["round"], fault["turn"]), []).append(fault)
    return by_turn


def _forfeits(log: Mapping[str, Any]) -> dict[int, tuple[int, int]]:
    """The (round, turn) of the fault that forfeited each forfeited seat: from the next turn
    on, every decision of that seat is a fallback the log does not mark."""
    out: dict[int, tuple[int, int]] = {}
    gone = set(log.get("forfeited") or ())
    counted: dict[int, int] = {}
    for fault in log.get("faults") or ():
        seat = fault["seat"]
        if seat not in gone or seat in out:
            continue
        counted[seat] = counted.get(seat, 0) + 1
        if counted[seat] >= FORFEIT_AFTER or fault["kind"] in FATAL:
            out[seat] = (fault["round"], fault["turn"])
    return out


def _fault(
    fault: Mapping[str, Any], card: int | None, hand: Sequence[int], lowest_take: bool
) -> dict[str, Any]:
    """A fault as the page marks it, with what the fallback replaced (see the module)."""
    kind = str(fault["kind"])
    if kind == FaultKind.ILLEGAL_ROW:
        fallback = "row"
    elif card is None or not hand:
        fallback = "decision"
    elif card != min(hand):
        # The card was its own (a fallback card is the lowest in hand): the fault replaced
        # its row, if it chose one, or nothing the log shows (output it was not asked for).
        fallback = "row" if lowest_take else "none"
    else:
        fallback = "decision" if lowest_take else "card"
    return {
        "seat": fault["seat"],
        "kind": kind,
        "detail": str(fault.get("detail") or "")[:DETAIL_SHOWN],
        "fallback": fallback,
        "fallback_text": FALLBACK_TEXT[fallback],
    }


def _row_heads(rows: Sequence[Sequence[int]]) -> list[dict[str, Any]]:
    return [{"heads": heads_of(r), "full": len(r) >= ROW_LIMIT} for r in rows]


def replay_data(log: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the viewer's data, the text view's rounds) of a verified log; LogError if it is not
    one that replays."""
    n_players(log)  # LogError unless the players are well formed
    names = [p["agent"] for p in log["players"]]
    ranks = list(log.get("ranks") or ())
    viewer: dict[str, Any] = {
        "names": names,
        "rounds": [],
        "winners": [s for s, rank in enumerate(ranks) if rank == 1],
    }
    faults = _faults_by_turn(log)
    forfeits = _forfeits(log)
    text: list[dict[str, Any]] = []
    before: Sequence[int] = ()
    turns: list[dict[str, Any]] = []
    rows_text: list[dict[str, Any]] = []
    turn: dict[str, Any] = {}
    line: dict[str, Any] = {}
    hands: list[list[int]] = []  # what each seat holds before the current turn
    for step in steps(log):
        if type(step) is Deal:
            before = step.scores
            turns, rows_text = [], []
            hands = [sorted(h) for h in step.hands]
            late = [_fault(f, None, (), False) for f in faults.get((step.round, 10), ())]
            viewer["rounds"].append(
                {"turns": turns, "hands": [list(h) for h in step.hands], "late_faults": late}
            )
            text.append(
                {
                    "number": step.round + 1,
                    "rows": step.rows,
                    "hands": [list(h) for h in step.hands],
                    "turns": rows_text,
                    "late_faults": [dict(f, player=names[f["seat"]]) for f in late],
                }
            )
        elif type(step) is Reveal:
            reveal = {
                "rows": step.rows,
                "pen": step.penalties,
                "totals": _totals(before, step.penalties),
            }
            lowest = {
                t["seat"]
                for t in log["rounds"][step.round]["turns"][step.turn]["takes"]
                if t["reason"] == "lowest"
            }
            marked = [
                _fault(f, step.cards[f["seat"]], hands[f["seat"]], f["seat"] in lowest)
                for f in faults.get((step.round, step.turn), ())
            ]
            gone = [s for s, at in sorted(forfeits.items()) if at < (step.round, step.turn)]
            turn = {
                "cards": step.cards,
                "order": step.order,
                "steps": [reveal],
                "faults": marked,
                "forfeited": gone,
            }
            turns.append(turn)
            line = {
                "number": step.turn + 1,
                "cards": step.cards,
                "takes": [],
                "rows": (),
                "heads": [],
                "faults": [dict(f, player=names[f["seat"]]) for f in marked],
                "forfeited": [names[s] for s in gone],
            }
            rows_text.append(line)
            for seat, card in enumerate(step.cards):
                if card in hands[seat]:
                    hands[seat].remove(card)
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
                        "costs": list(take.costs) if take.costs is not None else None,
                        "cheapest": take.costs is None or take.row in _least(take.costs),
                    }
                )
            line["rows"] = step.rows
            line["heads"] = _row_heads(step.rows)
        elif type(step) is RoundEnd:
            winners = _least(step.penalties)
            viewer["rounds"][-1]["winners"] = winners
            text[-1]["penalties"] = step.penalties
            text[-1]["totals"] = step.scores
            text[-1]["winners"] = [names[s] for s in winners]
    viewer["scores"] = list(log.get("scores") or ())
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
