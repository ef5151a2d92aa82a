"""The ``cow006`` command: play a match, run a tournament, verify logs.

::

    cow006 match builtin:random builtin:heuristics ./my_bot.py --seed 7 --log match.json
    cow006 tournament builtin:random builtin:best ./my_bot.py --matches 100 --players 3 \\
        --jobs 4 --out logs/ --seed 1
    cow006 verify logs/*.json

Agents are specs (see ``cow006.spec``): ``builtin:NAME`` plays in-process, a path to a bot
file (``.py``, ``.js``) or folder (with ``bot.py``) runs the bot in its own process.

Bad input (a missing file, a bot that does not start, a wrong number of players, an unreadable
log, a bad option) is reported as one ``error: ...`` line on stderr with a non-zero exit, never
a traceback.  This module and ``cow006.transcript`` are the only parts of the SDK that use
``typer`` and ``rich``; ``trueskill`` is imported by ``cow006.tournament.rate``.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import os
import random
import sys
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text
from typer.core import TyperGroup

from . import log as match_log
from . import sandbox as sandbox_mod
from . import spec as specs_mod
from . import tournament as tour
from . import transcript
from .cards import MAX_PLAYERS, MIN_PLAYERS
from .errors import Cow006Error, LogError, SetupError
from .host import Limits
from .runner import Match
from .sandbox import Sandbox

STDERR_TAIL = 20  # lines of a bot's stderr shown after a match
PIPE_WIDTH = 120  # columns of output that does not go to a terminal


def _console(*, stderr: bool = False) -> Console:
    """A rich console; when the output is not a terminal (a file, a pipe) tables get room."""
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=PIPE_WIDTH)
    return console


def _one_line(message: str) -> str:
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


def _fail(message: str, code: int = 1) -> None:
    typer.echo(f"error: {_one_line(message)}", err=True)
    sys.exit(code)


class _Group(TyperGroup):
    """The command group, reporting every expected failure as one ``error:`` line."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except typer.TyperException as exc:  # click's usage errors, in typer's own copy
            code = getattr(exc, "exit_code", 2)
            if type(exc).__name__ == "NoArgsIsHelpError":
                exc.show()  # type: ignore[attr-defined]
                sys.exit(code)
            ctx = getattr(exc, "ctx", None)
            hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
            _fail(exc.format_message() + hint, code)
        except typer.Abort:
            _fail("aborted", 130)
        except Cow006Error as exc:
            _fail(str(exc))
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            _fail(f"{exc.strerror or exc}{where}")
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    cls=_Group,
    name="cow006",
    help="Корова 006 (6 nimmt!) bot arena: play matches and tournaments, verify match logs.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

AGENT_HELP = (
    "Agents: builtin:NAME (a builtin bot, in-process) or the path of a bot file "
    "(.py, .js, or a folder with bot.py or bot.js), which runs in its own process."
)
SANDBOX_HELP = (
    "Run bot processes in the bubblewrap sandbox (the default wherever it works; without it "
    "a match with bot files is refused). --no-sandbox, or COW006_SANDBOX=off, runs them as "
    "plain processes, for your own bots only; the log then records sandbox: false."
)

AgentsArg = Annotated[list[str], typer.Argument(help=AGENT_HELP, metavar="AGENTS...")]
SeedOpt = Annotated[
    int | None, typer.Option("--seed", help="Seed; a random one is drawn if omitted.")
]
DecisionOpt = Annotated[
    float | None,
    typer.Option("--decision", help="Seconds a bot process may take per decision."),
]
BankOpt = Annotated[
    float | None,
    typer.Option("--bank", help="Extra seconds a bot process may spend over a whole match."),
]
StartupOpt = Annotated[
    float | None,
    typer.Option("--startup", help="Seconds a bot process may take to start."),
]
SandboxOpt = Annotated[bool | None, typer.Option("--sandbox/--no-sandbox", help=SANDBOX_HELP)]


def _limits(decision: float | None, bank: float | None, startup: float | None) -> Limits | None:
    """The time limits for bot processes, or None for the defaults of ``cow006.host``."""
    given = {"decision": decision, "bank": bank, "startup": startup}
    given = {k: v for k, v in given.items() if v is not None}
    for key, value in given.items():
        low_ok = value >= 0 if key == "bank" else value > 0
        if not (math.isfinite(value) and low_ok):
            what = "zero or more" if key == "bank" else "a positive number of"
            raise SetupError(f"--{key} must be {what} seconds, not {value}")
    if not given:
        return None
    return dataclasses.replace(Limits(), **given)


def _check_seed(seed: int | None) -> int:
    if seed is None:
        return random.SystemRandom().getrandbits(63)
    if seed < 0:
        raise SetupError(f"--seed must be a non-negative integer, not {seed}")
    return seed


def _sandbox(flag: bool | None, specs: list[str]) -> Sandbox | None:
    """The sandbox for this command's bot processes (fail closed: see cow006.sandbox)."""
    needed = not all(specs_mod.is_builtin(s) for s in specs)
    return sandbox_mod.resolve_mode(flag, needed=needed)


@app.command()
def match(
    agents: AgentsArg,
    seed: SeedOpt = None,
    log: Annotated[
        Path | None, typer.Option("--log", help="Write the match log (JSON) to this file.")
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print only the final table.")
    ] = False,
    decision: DecisionOpt = None,
    bank: BankOpt = None,
    startup: StartupOpt = None,
    sandbox: SandboxOpt = None,
) -> None:
    """Play one match of 2 to 10 agents and print it turn by turn."""
    n = len(agents)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise SetupError(f"a match needs {MIN_PLAYERS} to {MAX_PLAYERS} agents, not {n}")
    seed = _check_seed(seed)
    limits = _limits(decision, bank, startup)
    sb = _sandbox(sandbox, agents)
    specs_mod.check(agents, limits, sandbox=sb)
    names = tour.labels(agents)
    with specs_mod.agents(agents, limits, names, sandbox=sb) as seated:
        result = Match(seated, seed, names=names).run()
    result["sandbox"] = sandbox_mod.log_entry(sb)
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        match_log.write(result, log)
    console = _console()
    if not quiet:
        transcript.print_transcript(result, console)
        for seat, agent in enumerate(seated):
            text = str(getattr(agent, "stderr", "") or "").rstrip()
            if text:
                lines = text.splitlines()
                console.print(Text(f"stderr of seat {seat} ({names[seat]}):", style="bold"))
                if len(lines) > STDERR_TAIL:
                    console.print(Text(f"  ... {len(lines) - STDERR_TAIL} lines before"))
                for line in lines[-STDERR_TAIL:]:
                    console.print(Text(f"  {line}"))
                console.print()
    console.print(transcript.result_table(result))
    if log is not None:
        console.print(Text(f"log written to {log}"))


@app.command()
def tournament(
    agents: AgentsArg,
    matches: Annotated[int, typer.Option("--matches", "-n", help="Number of matches.")],
    players: Annotated[
        int | None,
        typer.Option(
            "--players",
            "-k",
            help="Seats per match (2 to 10); default: every agent, at most 10. "
            "With fewer seats than agents, tables are sampled so all play about equally often.",
        ),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", help="Matches played in parallel (default: CPU count)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write every match log to this folder (match-00001.json ...)."),
    ] = None,
    seed: SeedOpt = None,
    decision: DecisionOpt = None,
    bank: BankOpt = None,
    startup: StartupOpt = None,
    sandbox: SandboxOpt = None,
) -> None:
    """Play many matches (seats rotated, tables sampled) and print a TrueSkill leaderboard."""
    n = len(agents)
    if players is None:
        players = min(n, MAX_PLAYERS)
    tour.check_table(n, players)
    if matches < 1:
        raise SetupError(f"--matches must be at least 1, not {matches}")
    if jobs is None:
        jobs = os.cpu_count() or 1
    if jobs < 1:
        raise SetupError(f"--jobs must be at least 1, not {jobs}")
    jobs = min(jobs, matches)
    seed = _check_seed(seed)
    limits = _limits(decision, bank, startup)
    sb = _sandbox(sandbox, agents)
    specs_mod.check(agents, limits, sandbox=sb)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    plan = tour.plan(agents, matches, players, seed, limits, sandbox=sb)
    console = _console()
    console.print(
        Text(
            f"tournament: {n} agents, {matches} matches of {players} players, "
            f"seed {seed}, {jobs} job{'s' if jobs != 1 else ''}"
        )
    )
    results: list[tour.Result | None] = [None] * len(plan)

    def record(job: tour.Job, log: dict[str, Any]) -> None:
        if out is not None:
            match_log.write(log, out / f"match-{job.index + 1:05d}.json")
        results[job.index] = tour.result_of(job, log)

    progress = Progress(
        TextColumn("matches"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=_console(stderr=True),
    )
    with progress:
        task = progress.add_task("matches", total=len(plan))
        if jobs == 1:
            for job in plan:
                record(job, tour.run_job(job))
                progress.advance(task)
        else:
            pool = ProcessPoolExecutor(
                max_workers=jobs, mp_context=multiprocessing.get_context("spawn")
            )
            try:
                futures: dict[Future[dict[str, Any]], tour.Job] = {
                    pool.submit(tour.run_job, job): job for job in plan
                }
                for fut in as_completed(futures):
                    record(futures[fut], fut.result())
                    progress.advance(task)
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
    done = [r for r in results if r is not None]
    board = tour.standings(tour.labels(agents), done)
    console.print(transcript.leaderboard_table(board))
    if out is not None:
        console.print(Text(f"{len(done)} logs written to {out}"))


@app.command()
def verify(
    logs: Annotated[list[Path], typer.Argument(help="Match log files (JSON).", metavar="LOGS...")],
) -> None:
    """Replay match logs and check every decision and score; prints "ok N logs"."""
    for path in logs:
        try:
            match_log.verify(match_log.read(path))
        except LogError as exc:
            message = str(exc)
            prefix = f"{path}: "
            if message.startswith(prefix):  # read() already names the file
                message = message[len(prefix) :]
            typer.echo(f"{path}: {_one_line(message)}", err=True)
            raise typer.Exit(1) from None
    typer.echo(f"ok {len(logs)} logs")


def main() -> None:
    """Entry point of the ``cow006`` console script and of ``python -m cow006``."""
    app(prog_name="cow006")
