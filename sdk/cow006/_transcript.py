"""Readable rich renderings for the ``cow006`` command: match transcripts, replays, results,
leaderboards.

Everything here is drawn from a ``cow006-match-1`` log (or tournament standings), so a
transcript shows exactly what was played and can be printed again from a saved log; a replay
(``print_replay``) shows it step by step, every row from the engine (``cow006.replay``).  Text
is built with ``rich.text.Text`` rather than markup, so agent names and paths print verbatim.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import PurePath
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import engine
from ._cli_shared import plural
from ._tournament import Standing
from .cards import heads_of
from .replay import Deal, Placement, Reveal, RoundEnd, steps
from .untrusted import terminal_data

REASONS = {"sixth": "sixth card", "lowest": "lowest card"}


def short_names(log: Mapping[str, Any]) -> list[str]:
    """Compact per-seat names for transcript lines: ``random`` for ``builtin:random``, a bot
    file's stem for a path; a name shared by several seats gets ``#seat``."""
    names = []
    for p in log["players"]:
        agent = str(p["agent"])
        if agent.startswith("builtin:"):
            agent = agent[len("builtin:") :]
        else:
            path = PurePath(agent)
            if path.suffix in (".py", ".js"):
                agent = path.parent.name or path.stem if path.name == "bot.py" else path.stem
            else:
                agent = path.name or agent
        names.append(agent)
    counts = {n: names.count(n) for n in names}
    return [f"{n}#{s}" if counts[n] > 1 else n for s, n in enumerate(names)]


def _cards(cards: Sequence[int]) -> str:
    return " ".join(str(c) for c in cards)


def _rows(rows: Sequence[Sequence[int]], indent: str, fresh: Collection[int] = ()) -> list[Text]:
    """One line per row: its cards (those in ``fresh`` highlighted) and its heads."""
    lines = []
    for i, row in enumerate(rows):
        line = Text(f"{indent}row {i}  ", style="dim")
        for k, card in enumerate(row):
            if k:
                line.append(" ")
            line.append(str(card), style="bold cyan" if card in fresh else "bold")
        line.append(f"  ({plural(heads_of(row), 'head')})", style="dim")
        lines.append(line)
    return lines


def _turn_line(t: int, names: Sequence[str], cards: Sequence[int]) -> Text:
    """``turn  3  alice 12  ·  bob 40``: a turn's revealed cards by seat."""
    line = Text(f"turn {t + 1:>2}  ", style="bold")
    for seat, card in enumerate(cards):
        if seat:
            line.append("  ·  ", style="dim")
        line.append(f"{names[seat]} ")
        line.append(str(card), style="bold cyan")
    return line


def _scores(names: Sequence[str], values: Sequence[int]) -> str:
    return ", ".join(f"{n} {v}" for n, v in zip(names, values, strict=True))


def print_transcript(log: Mapping[str, Any], console: Console) -> None:
    """The match turn by turn: each deal's rows, each turn's reveals, takes and rows after."""
    names = short_names(log)
    header = Text("Match ", style="bold")
    header.append(f"seed {log['seed']}, {len(names)} players")
    console.print(header)
    for p, short in zip(log["players"], names, strict=True):
        console.print(Text(f"  seat {p['seat']}  {short}  ({p['agent']})"))
    totals = [0] * len(names)
    for r, rnd in enumerate(log["rounds"]):
        console.print()
        console.rule(Text(f"Round {r + 1}", style="bold"))
        console.print(Text("deal", style="bold"))
        for line in _rows(rnd["rows"], "  "):
            console.print(line)
        for t, turn in enumerate(rnd["turns"]):
            console.print(_turn_line(t, names, turn["cards"]))
            for take in turn["takes"]:
                card = turn["cards"][take["seat"]]
                line = Text("  ")
                line.append(names[take["seat"]], style="bold")
                line.append(f" takes row {take['row']}: {_cards(take['cards'])}  ")
                line.append(plural(heads_of(take["cards"]), "head"), style="bold red")
                line.append(f"  ({REASONS.get(take['reason'], take['reason'])} {card})")
                console.print(line)
            for row_line in _rows(turn["rows"], "    "):
                console.print(row_line)
        penalties = rnd["penalties"]
        totals = [a + b for a, b in zip(totals, penalties, strict=True)]
        console.print(Text(f"round {r + 1} penalties: {_scores(names, penalties)}", style="bold"))
        console.print(Text(f"totals: {_scores(names, totals)}"))
    faults = log.get("faults") or []
    if faults:
        console.print()
        console.print(Text("faults", style="bold red"))
        for f in faults:
            seat = f.get("seat", 0)
            who = names[seat] if 0 <= seat < len(names) else f"seat {seat}"
            detail = f": {f['detail']}" if f.get("detail") else ""
            console.print(
                Text(
                    f"  {who} (seat {seat}), round {f.get('round', -1) + 1}, "
                    f"turn {f.get('turn', -1) + 1}: {f.get('kind')}{detail}"
                )
            )
    console.print()


def print_replay(
    log: Mapping[str, Any], console: Console, source: str, delay: float, only: int | None
) -> None:
    """Print a verified log step by step (``cow006.replay.steps``); ``only``: one round."""
    shown = terminal_data(log)  # names and fault details may be anyone's text: escaped
    names = short_names(shown)
    width = max(len(n) for n in names)
    n = len(names)

    def pause() -> None:
        if delay > 0:
            time.sleep(delay)

    console.print(Text(f"Replay of {source}: seed {shown['seed']}, {n} players", style="bold"))
    for p, short in zip(shown["players"], names, strict=True):
        full = f"  ({p['agent']})" if p["agent"] != short else ""
        console.print(Text(f"  seat {p['seat']}  {short}{full}"))
    before: Sequence[int] = ()
    scores: Sequence[int] = ()
    cards: Sequence[int] = ()
    taken_now = [0] * n
    for step in steps(log):
        if only is not None and only != step.round + 1:
            if type(step) is RoundEnd:
                scores = step.scores
            continue
        if type(step) is Deal:
            before = step.scores
            console.print()
            console.rule(Text(f"Round {step.round + 1}", style="bold"))
            console.print(Text("deal", style="bold"))
            for line in _rows(step.rows, "  "):
                console.print(line)
            pause()
        elif type(step) is Reveal:
            cards = step.cards
            taken_now = [0] * n
            console.print(_turn_line(step.turn, names, cards))
        elif type(step) is Placement:
            line = Text(f"  {names[step.seat]:<{width}} {step.card:>3} ")
            take = step.take
            if take is None:
                line.append(f"→ row {step.row}", style="dim")
            else:
                taken_now[step.seat] += take.heads
                how = (
                    f"6th card of row {take.row}"
                    if take.reason == "sixth"
                    else f"below every row, chose row {take.row}"
                )
                line.append(f"→ {how}: takes ", style="red")
                line.append(_cards(take.cards), style="bold red")
                line.append(f"  {plural(take.heads, 'head')}", style="bold red")
            console.print(line)
            pause()
            if step.nth == n:  # the turn's last card: the rows after it and the totals
                for row_line in _rows(step.rows, "    ", cards):
                    console.print(row_line)
                line = Text("    totals: ")
                for seat in range(n):
                    if seat:
                        line.append(" · ", style="dim")
                    line.append(f"{names[seat]} {before[seat] + step.penalties[seat]}")
                    if taken_now[seat]:
                        line.append(f" (+{taken_now[seat]})", style="bold red")
                console.print(line)
                pause()
        elif type(step) is RoundEnd:
            scores = step.scores
            pens = ", ".join(f"{names[s]} {step.penalties[s]}" for s in range(n))
            console.print(Text(f"round {step.round + 1} penalties: {pens}", style="bold"))
            totals = ", ".join(f"{names[s]} {scores[s]}" for s in range(n))
            console.print(Text(f"totals: {totals}"))
    console.print()
    # The final table from the replay's totals (verify checked that the log's agree).
    final = {**shown, "scores": list(scores), "ranks": engine.ranks(scores)}
    console.print(result_table(final))


def result_table(log: Mapping[str, Any]) -> Table:
    """The final table of a match: seat, agent, score, rank, faults."""
    n = len(log["players"])
    faults = [0] * n
    for f in log.get("faults") or []:
        if 0 <= f.get("seat", -1) < n:
            faults[f["seat"]] += 1
    forfeited = set(log.get("forfeited") or [])
    table = Table(title=f"Result (seed {log['seed']})", box=box.SIMPLE_HEAD)
    table.add_column("seat", justify="right")
    table.add_column("agent", overflow="fold")
    table.add_column("score", justify="right")
    table.add_column("rank", justify="right")
    table.add_column("faults", justify="right")
    for seat in sorted(range(n), key=lambda s: (log["ranks"][s], s)):
        fault_text = str(faults[seat]) + (" (forfeited)" if seat in forfeited else "")
        table.add_row(
            str(seat),
            Text(str(log["players"][seat]["agent"])),
            str(log["scores"][seat]),
            str(log["ranks"][seat]),
            fault_text,
        )
    return table


def leaderboard_table(rows: Sequence[Standing], title: str = "Leaderboard") -> Table:
    """The tournament leaderboard, in the order given (best mu - 3 sigma first)."""
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("#", justify="right")
    table.add_column("agent", overflow="fold", ratio=1)
    table.add_column("mu", justify="right")
    table.add_column("sigma", justify="right")
    table.add_column("mu-3σ", justify="right")
    table.add_column("mean\nscore", justify="right")
    table.add_column("win\nrate", justify="right")
    table.add_column("matches", justify="right")
    table.add_column("faults", justify="right")
    for place, s in enumerate(rows, 1):
        table.add_row(
            str(place),
            Text(s.name),
            f"{s.mu:.2f}",
            f"{s.sigma:.2f}",
            f"{s.conservative:.2f}",
            f"{s.mean_score:.1f}",
            f"{s.win_rate:.0%}",
            str(s.matches),
            str(s.faults),
        )
    return table
