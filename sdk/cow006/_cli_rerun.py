"""``cow006 rerun``: a recorded match played again with your bot deciding in one seat.

The match is a log file or a match id on the arena you are logged in to (as ``cow006
replay``); the bot is an agent spec (``builtin:NAME`` or a bot file, run in the sandbox
wherever it works).  ``cow006.rerun`` does the work and says where the counterfactual is
exact; this module prints it.  Registered on the ``cow006`` command by ``cow006.cli``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from . import log as match_log
from . import rerun as rerun_mod
from . import spec as specs_mod
from ._cli_arena import load_log
from ._cli_local import (
    AGENT_HELP,
    BankOpt,
    DecisionOpt,
    SandboxOpt,
    StartupOpt,
    _prepare,
    print_stderr,
)
from ._cli_shared import console as make_console
from ._errors import SetupError
from .untrusted import for_terminal


def _cell(value: int | None) -> str:
    return "-" if value is None else str(value)


def rerun(
    match: Annotated[
        str,
        typer.Argument(
            metavar="MATCH",
            help="A match log file, or a match id on the arena you are logged in to.",
        ),
    ],
    bot: Annotated[str, typer.Argument(metavar="BOT", help=AGENT_HELP)],
    seat: Annotated[int, typer.Option("--seat", help="The seat your bot takes (from 0).")],
    log: Annotated[
        Path | None, typer.Option("--log", help="Write the rerun's match log to this file.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the differences as one JSON object.")
    ] = False,
    decision: DecisionOpt = None,
    bank: BankOpt = None,
    startup: StartupOpt = None,
    sandbox: SandboxOpt = None,
) -> None:
    """Play a recorded match again with BOT in one seat and the others replaying their cards;
    print the turns where BOT decided otherwise and the heads it took instead."""
    recorded, source = load_log(match)
    n = len(recorded["players"])
    if not 0 <= seat < n:
        raise SetupError(f"--seat must be 0 to {n - 1} for this match, not {seat}")
    limits, sb = _prepare([bot], decision, bank, startup, sandbox)
    with specs_mod.agents([bot], limits, sandbox=sb) as (agent,):
        result = rerun_mod.rerun(recorded, seat, agent)
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        match_log.write(result.log, log)
    if as_json:
        typer.echo(json.dumps(result.as_dict()))
        return
    console = make_console()
    # The recorded names and the bot's stderr are the bots' words: printed escaped.
    old_name = for_terminal(str(recorded["players"][seat]["agent"]))
    console.print(Text(f"{source}: seat {seat} ({old_name}) replayed by {bot}", style="bold"))
    if result.same:
        console.print(Text("The rerun is the recorded match, turn for turn: no difference."))
    else:
        table = Table(box=box.SIMPLE_HEAD)
        for col in ("round", "turn", "recorded card", "card", "recorded row", "row"):
            table.add_column(col, justify="right")
        table.add_column("recorded heads", justify="right")
        table.add_column("heads", justify="right")
        for d in result.differences:
            table.add_row(
                str(d.round + 1),
                str(d.turn + 1),
                _cell(d.recorded_card),
                str(d.card),
                _cell(d.recorded_row),
                _cell(d.row),
                _cell(d.recorded_heads),
                str(d.heads),
            )
        console.print(table)
        first = result.differences[0] if result.differences else None
        if first is not None:
            console.print(
                Text(
                    f"Exact up to round {first.round + 1}, turn {first.turn + 1}; after it the "
                    "other seats play their recorded cards whatever the table "
                    "(see cow006.rerun)."
                )
            )
    console.print(
        Text(
            f"Score {result.recorded_score} -> {result.score}, "
            f"place {result.recorded_rank} -> {result.rank} of {n}."
        )
    )
    print_stderr(console, agent, bot)
    if log is not None:
        console.print(Text(f"log written to {log}"))
