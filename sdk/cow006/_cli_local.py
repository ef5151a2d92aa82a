"""``cow006 match``, ``cow006 tournament`` and ``cow006 verify``: play and check locally.

Agents are specs (see ``cow006.spec``): ``builtin:NAME`` plays in-process, a path to a bot
file (``.py``, ``.js``) or folder (with ``bot.py``) runs the bot in its own process, in the
sandbox wherever it works.  The commands are registered on the ``cow006`` command by
``cow006.cli``.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import os
import random
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Annotated

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

from . import _tournament as tour
from . import _transcript as transcript
from . import log as match_log
from . import sandbox as sandbox_mod
from . import spec as specs_mod
from ._cli_shared import console as make_console
from ._cli_shared import one_line
from ._errors import LogError, SetupError
from ._runner import MatchRunner
from .cards import MAX_PLAYERS, MIN_PLAYERS
from .host import Limits
from .log import MatchLog
from .sandbox import Sandbox
from .untrusted import for_terminal, terminal_data

STDERR_TAIL = 20  # lines of a bot's stderr shown after a match

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
    int | None,
    typer.Option(
        "--seed",
        help="Seed of the deals (and of a tournament's tables); a random one is drawn if "
        "omitted. It never fixes the bots' "
        "own seeds, which are drawn independently (a bot must not rebuild the deal from them).",
    ),
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


def print_stderr(console: Console, agent: object, who: str) -> None:
    """The last ``STDERR_TAIL`` lines a bot process wrote to stderr, escaped, if any."""
    text = for_terminal(str(getattr(agent, "stderr", "") or "")).rstrip()
    if not text:
        return
    lines = text.splitlines()
    console.print(Text(f"stderr of {who}:", style="bold"))
    if len(lines) > STDERR_TAIL:
        console.print(Text(f"  ... {len(lines) - STDERR_TAIL} lines before"))
    for line in lines[-STDERR_TAIL:]:
        console.print(Text(f"  {line}"))
    console.print()


def _limits(decision: float | None, bank: float | None, startup: float | None) -> Limits | None:
    """The time limits for bot processes, or None for the defaults of ``cow006.host``."""
    options = {"decision": decision, "bank": bank, "startup": startup}
    given = {k: v for k, v in options.items() if v is not None}
    for key, value in given.items():
        low_ok = value >= 0 if key == "bank" else value > 0
        if not (math.isfinite(value) and low_ok):
            what = "zero or more" if key == "bank" else "a positive number of"
            raise SetupError(f"--{key} must be {what} seconds, not {value}")
    if not given:
        return None
    # ``given`` holds only float fields; mypy checks a ** dict against every field (and the
    # int ones refuse a float).
    return dataclasses.replace(Limits(), **given)  # type: ignore[arg-type]


def _check_seed(seed: int | None) -> int:
    if seed is None:
        return random.SystemRandom().getrandbits(63)
    if seed < 0:
        raise SetupError(f"--seed must be a non-negative integer, not {seed}")
    return seed


def _agent_seeds(text: str | None, n: int) -> list[int] | None:
    """``--agent-seeds 1,2,3``: one integer in 0 .. 2**63 - 1 per seat, or None (drawn)."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != n or not all(p.isdigit() and len(p) <= 19 for p in parts):
        raise SetupError(
            f"--agent-seeds takes {n} non-negative integers separated by commas, one per agent"
        )
    seeds = [int(p) for p in parts]
    if any(s >= 2**63 for s in seeds):
        raise SetupError("--agent-seeds: each seed is at most 2**63 - 1")
    return seeds


def _sandbox(flag: bool | None, specs: list[str]) -> Sandbox | None:
    """The sandbox for this command's bot processes (fail closed: see cow006.sandbox)."""
    needed = not all(specs_mod.is_builtin(s) for s in specs)
    return sandbox_mod.resolve_mode(flag, needed=needed)


def _prepare(
    agents: list[str],
    decision: float | None,
    bank: float | None,
    startup: float | None,
    sandbox: bool | None,
) -> tuple[Limits | None, Sandbox | None]:
    """The limits and the sandbox of the bot processes, once every agent spec is checked."""
    limits = _limits(decision, bank, startup)
    sb = _sandbox(sandbox, agents)
    specs_mod.check(agents, limits, sandbox=sb)
    return limits, sb


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
    agent_seeds: Annotated[
        str | None,
        typer.Option(
            "--agent-seeds",
            help="The bots' own seeds, one per seat, comma-separated: a log's agent_seeds, to "
            "play a match again exactly (with --seed). Drawn at random if omitted.",
        ),
    ] = None,
) -> None:
    """Play one match of 2 to 10 agents and print it turn by turn."""
    n = len(agents)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise SetupError(f"a match needs {MIN_PLAYERS} to {MAX_PLAYERS} agents, not {n}")
    seed = _check_seed(seed)
    own_seeds = _agent_seeds(agent_seeds, n)
    limits, sb = _prepare(agents, decision, bank, startup, sandbox)
    names = tour.labels(agents)
    with specs_mod.agents(agents, limits, names, sandbox=sb) as seated:
        result = MatchRunner(seated, seed, names=names, agent_seeds=own_seeds).run()
    result["sandbox"] = sandbox_mod.log_entry(sb)
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        match_log.write(result, log)
    console = make_console()
    # Bot text (fault details, stderr) is printed escaped: a bot must not write the viewer's
    # clipboard (OSC 52), retitle or clear the terminal.  The log file keeps it as it is.
    shown = terminal_data(result)
    if not quiet:
        transcript.print_transcript(shown, console)
        for seat, agent in enumerate(seated):
            print_stderr(console, agent, f"seat {seat} ({names[seat]})")
    console.print(transcript.result_table(shown))
    if log is not None:
        console.print(Text(f"log written to {log}"))


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
    limits, sb = _prepare(agents, decision, bank, startup, sandbox)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    plan = tour.plan(agents, matches, players, seed, limits, sandbox=sb)
    console = make_console()
    console.print(
        Text(
            f"tournament: {n} agents, {matches} matches of {players} players, "
            f"seed {seed}, {jobs} job{'s' if jobs != 1 else ''}"
        )
    )
    results: list[tour.Result | None] = [None] * len(plan)

    def record(job: tour.Job, log: MatchLog) -> None:
        if out is not None:
            match_log.write(log, out / f"match-{job.index + 1:05d}.json")
        results[job.index] = tour.result_of(job, log)

    progress = Progress(
        TextColumn("matches"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=make_console(stderr=True),
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
                futures: dict[Future[MatchLog], tour.Job] = {
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
            typer.echo(f"{path}: {for_terminal(one_line(message))}", err=True)
            raise typer.Exit(1) from None
    typer.echo(f"ok {len(logs)} logs")
