"""The ``cow006`` command: play a match, run a tournament, verify logs.

::

    cow006 match builtin:random builtin:heuristics ./my_bot.py --seed 7 --log match.json
    cow006 tournament builtin:random builtin:best ./my_bot.py --matches 100 --players 3 \\
        --jobs 4 --out logs/ --seed 1
    cow006 verify logs/*.json

And against an arena's HTTP API (``cow006.client``; credentials saved by ``login``)::

    cow006 login http://127.0.0.1:8000 --register alice
    cow006 submit ./my_bot.py --agent my-bot --ladder main
    cow006 status
    cow006 logs 42 --save match-42.json
    cow006 replay 42          # or a log file: cow006 replay match.json
    cow006 token list         # your API tokens there; token create|revoke|rotate

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
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from . import client, engine, transcript
from . import log as match_log
from . import sandbox as sandbox_mod
from . import spec as specs_mod
from . import tournament as tour
from .cards import HEADS, MAX_PLAYERS, MIN_PLAYERS
from .errors import Cow006Error, LogError, SetupError
from .host import Limits
from .runner import Match
from .sandbox import Sandbox
from .untrusted import for_terminal, terminal_data

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
    # An error may quote a bot (a start-up fault): never a raw escape on the terminal.
    typer.echo(f"error: {for_terminal(_one_line(message))}", err=True)
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
    help="Корова 006 (6 nimmt!) bot arena: play matches and tournaments, verify match logs, "
    "submit bots to an arena and follow them there.",
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
    int | None,
    typer.Option(
        "--seed",
        help="Seed of the deals (and of a tournament's tables); a random one is drawn if "
        "omitted. It never fixes the bots' "
        "own seeds, which are drawn independently (a bot must not rebuild the deal from them).",
    ),
]
AgentSeedsOpt = Annotated[
    str | None,
    typer.Option(
        "--agent-seeds",
        help="The bots' own seeds, one per seat, comma-separated: a log's agent_seeds, to play "
        "a match again exactly (with --seed). Drawn at random if omitted.",
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
    agent_seeds: AgentSeedsOpt = None,
) -> None:
    """Play one match of 2 to 10 agents and print it turn by turn."""
    n = len(agents)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise SetupError(f"a match needs {MIN_PLAYERS} to {MAX_PLAYERS} agents, not {n}")
    seed = _check_seed(seed)
    own_seeds = _agent_seeds(agent_seeds, n)
    limits = _limits(decision, bank, startup)
    sb = _sandbox(sandbox, agents)
    specs_mod.check(agents, limits, sandbox=sb)
    names = tour.labels(agents)
    with specs_mod.agents(agents, limits, names, sandbox=sb) as seated:
        result = Match(seated, seed, names=names, agent_seeds=own_seeds).run()
    result["sandbox"] = sandbox_mod.log_entry(sb)
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        match_log.write(result, log)
    console = _console()
    # Bot text (fault details, stderr) is printed escaped: a bot must not write the viewer's
    # clipboard (OSC 52), retitle or clear the terminal.  The log file keeps it as it is.
    shown = terminal_data(result)
    if not quiet:
        transcript.print_transcript(shown, console)
        for seat, agent in enumerate(seated):
            text = for_terminal(str(getattr(agent, "stderr", "") or "")).rstrip()
            if text:
                lines = text.splitlines()
                console.print(Text(f"stderr of seat {seat} ({names[seat]}):", style="bold"))
                if len(lines) > STDERR_TAIL:
                    console.print(Text(f"  ... {len(lines) - STDERR_TAIL} lines before"))
                for line in lines[-STDERR_TAIL:]:
                    console.print(Text(f"  {line}"))
                console.print()
    console.print(transcript.result_table(shown))
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
            typer.echo(f"{path}: {for_terminal(_one_line(message))}", err=True)
            raise typer.Exit(1) from None
    typer.echo(f"ok {len(logs)} logs")


def main() -> None:
    """Entry point of the ``cow006`` console script and of ``python -m cow006``."""
    app(prog_name="cow006")


# --- the arena: login, submit, status, logs, replay -------------------------------------------
# These talk to an arena's HTTP API through ``cow006.client`` (standard library only); a
# ClientError is a Cow006Error, so the group above prints it as one ``error:`` line.

REPLAY_DELAY = 0.4  # seconds between two steps of a replay shown on a terminal
RECENT_MATCHES = 5  # matches per agent in ``cow006 status``
RECENT_VERSIONS = 5  # versions per agent in ``cow006 status`` (all of them with --agent)


def _arena(*, token_needed: bool = True) -> tuple[client.Client, client.Credentials]:
    """A client for the arena the user logged in to (or COW006_URL / COW006_TOKEN)."""
    creds = client.load_credentials()
    if creds.url is None:
        raise client.ClientError(
            "not logged in: run `cow006 login URL` first (or set COW006_URL and COW006_TOKEN)"
        )
    if token_needed and not creds.token:
        raise client.ClientError(
            f"no API token for {creds.url}: run `cow006 login {creds.url}` first "
            "(or set COW006_TOKEN)"
        )
    return client.Client(creds.url, creds.token), creds


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@app.command()
def login(
    url: Annotated[str, typer.Argument(help="The arena's address, e.g. http://127.0.0.1:8000.")],
    token: Annotated[
        str | None,
        typer.Option("--token", help="Your API token (else COW006_TOKEN, else a prompt)."),
    ] = None,
    register: Annotated[
        str | None,
        typer.Option(
            "--register",
            metavar="NAME",
            help="Register a new user NAME on the arena and log in with its token.",
        ),
    ] = None,
    invite: Annotated[
        str | None,
        typer.Option(
            "--invite",
            metavar="CODE",
            help="With --register: the invite code, where the arena registers by invitation.",
        ),
    ] = None,
) -> None:
    """Log in to an arena (check the API token, or register a user) and save the credentials."""
    base = client.normalize_url(url)
    if token is not None and register is not None:
        raise SetupError("give either --token or --register, not both")
    if invite is not None and register is None:
        raise SetupError("--invite goes with --register NAME")
    if register is not None:
        body = {"name": register} if invite is None else {"name": register, "invite": invite}
        created = client.Client(base).post("/users", body)
        token, name = str(created["token"]), str(created["name"])
        path = client.save_credentials(base, token, name)
        # The arena shows a token once; the web pages ask for it, so the user gets to see it.
        typer.echo(f"registered {name}; API token (shown once, saved in {path}):")
        typer.echo(f"  {token}")
        if created.get("pending"):
            typer.echo(
                f"{name} is waiting for the arena's admins to approve it: the token works "
                "from then on"
            )
            return
    else:
        token = token or os.environ.get(client.TOKEN_ENV) or ""
        if not token:
            token = typer.prompt("API token", hide_input=True)
        token = token.strip()
        if not token:
            raise SetupError("an API token is needed to log in (or use --register NAME)")
        try:
            me = client.Client(base, token).get("/users/me")
        except client.ClientError as exc:
            if exc.status == 401:  # not the generic "log in again" hint: this is the login
                raise client.ClientError(f"{base} does not accept this API token") from None
            raise
        name = str(me["name"])
        client.save_credentials(base, token, name)
    typer.echo(f"logged in to {base} as {name}")


def _find_agent(arena: client.Client, owner_id: int, name: str) -> dict[str, Any] | None:
    for agent in arena.pages("/agents", owner_id=owner_id):
        if agent["name"] == name:
            return dict(agent)
    return None


def _find_ladder(arena: client.Client, key: str) -> dict[str, Any]:
    """A ladder by name (or id)."""
    for ladder in arena.pages("/ladders"):
        if ladder["name"] == key or str(ladder["id"]) == key:
            return dict(ladder)
    raise client.ClientError(f"there is no ladder {key!r} on {arena.url}")


def _wait_validated(
    arena: client.Client, version: dict[str, Any], timeout: float
) -> dict[str, Any]:
    """Poll the version until validation has made it active or rejected (at most timeout s)."""
    path = f"/agents/{version['agent_id']}/versions/{version['number']}"
    deadline = time.monotonic() + timeout
    pause = 0.25
    while version["status"] == "pending":
        left = deadline - time.monotonic()
        if left <= 0:
            raise Cow006Error(
                f"{version['label']} is still pending after {timeout:g} s (validation is queued "
                "or slow); `cow006 status` shows it later"
            )
        time.sleep(min(pause, left))
        pause = min(pause * 1.5, 2.0)  # quick for the usual few seconds, gentle after
        version = arena.get(path)
    return version


@app.command()
def submit(
    path: Annotated[
        Path,
        typer.Argument(help="The bot: a .py file, a .zip with bot.py at its root, or a folder."),
    ],
    agent: Annotated[
        str, typer.Option("--agent", help="The agent to add a version to (created if new).")
    ],
    ladder: Annotated[
        list[str] | None,
        typer.Option(
            "--ladder",
            help="Once active, play this version in this ladder (name or id): enters the "
            "agent, or switches its entry to the new version.  Repeatable.",
        ),
    ] = None,
    wait: Annotated[
        bool,
        typer.Option("--wait/--no-wait", help="Wait for the validation's verdict (default)."),
    ] = True,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for the validation.")
    ] = 120.0,
) -> None:
    """Upload a new version of an agent and wait until validation makes it active or not."""
    if not (math.isfinite(timeout) and timeout > 0):
        raise SetupError(f"--timeout must be a positive number of seconds, not {timeout}")
    ladders_wanted = ladder or []
    if ladders_wanted and not wait:
        raise SetupError("--ladder needs the version to be active first: drop --no-wait")
    filename, data = client.bot_upload(path)
    arena, _ = _arena()
    me = arena.get("/users/me")
    # Ladders are looked up before anything is uploaded: a typo costs no upload.
    ladders = [_find_ladder(arena, key) for key in ladders_wanted]
    for lad in ladders:
        if lad["state"] == "closed":
            raise client.ClientError(f"the ladder {lad['name']} is closed")
    found = _find_agent(arena, int(me["id"]), agent)
    if found is None:
        found = dict(arena.post("/agents", {"name": agent}))
        typer.echo(f"created agent {agent}")
    try:
        version = arena.upload(f"/agents/{found['id']}/versions", filename, data)
        typer.echo(f"uploaded {version['label']} ({filename}, {_plural(len(data), 'byte')})")
    except client.ClientError as exc:
        detail = exc.detail
        if exc.status != 409 or not isinstance(detail, dict) or "number" not in detail:
            raise
        # The same bytes as a version the agent has: nothing new to validate or rate.
        version = arena.get(f"/agents/{found['id']}/versions/{detail['number']}")
        typer.echo(
            f"duplicate: {client.detail_message(detail)} ({version['status']}); nothing uploaded"
        )
    if not wait:
        typer.echo(f"{version['label']} is {version['status']}; `cow006 status` shows its verdict")
        return
    if version["status"] == "pending":
        typer.echo(f"validating {version['label']} (a match against built-in bots) ...")
    version = _wait_validated(arena, version, timeout)
    if version["status"] == "rejected":
        typer.echo(f"rejected: {version['label']}")
        for line in for_terminal(str(version.get("reason") or "(no reason given)")).splitlines():
            typer.echo(f"  {line}")
        _fail(f"validation rejected {version['label']}; fix the bot and submit it again")
    typer.echo(f"active: {version['label']} passed validation")
    for lad in ladders:
        entry = arena.post(
            f"/ladders/{lad['id']}/entries",
            {"agent_id": version["agent_id"], "version_id": version["id"]},
        )
        typer.echo(f"ladder {lad['name']}: {entry['label']} plays there now")


def _when(stamp: str | None) -> str:
    """An API timestamp as 'YYYY-MM-DD HH:MM' (UTC), or '-'."""
    return stamp[:16].replace("T", " ") if stamp else "-"


@app.command()
def status(
    agent: Annotated[
        str | None, typer.Option("--agent", help="Only this agent (all its versions).")
    ] = None,
) -> None:
    """Your agents on the arena: versions and validation, ratings per ladder, last matches."""
    arena, _ = _arena()
    me = arena.get("/users/me")
    agents = list(arena.pages("/agents", owner_id=me["id"]))
    if agent is not None:
        agents = [a for a in agents if a["name"] == agent]
        if not agents:
            raise client.ClientError(f"you have no agent named {agent!r} on {arena.url}")
    console = _console()
    console.print(Text(f"{me['name']} on {arena.url}: {_plural(len(agents), 'agent')}"))
    if not agents:
        console.print(Text("submit one with: cow006 submit bot.py --agent NAME"))
        return
    keep = None if agent is not None else RECENT_VERSIONS
    versions = Table(title="Versions", box=box.SIMPLE_HEAD)
    for col in ("agent", "version", "status", "uploaded", "file"):
        versions.add_column(col, justify="right" if col == "version" else "left")
    versions.add_column("reason", overflow="fold", ratio=1)
    for a in agents:
        rows = list(arena.pages(f"/agents/{a['id']}/versions"))
        if keep is not None and len(rows) > keep:
            rows = rows[-keep:]
        for v in reversed(rows):  # newest first
            style = {"active": "green", "rejected": "red"}.get(v["status"], "yellow")
            # The reason's head and its first fault; `submit` printed it in full.  It quotes
            # the bot: escaped.  A suspension's reason comes first: it is the news.
            text = for_terminal(str(v.get("suspended_reason") or v.get("reason") or ""))
            reason = [ln.strip() for ln in text.splitlines() if ln.strip()]
            versions.add_row(
                Text(a["name"] + (" (disabled)" if a["disabled"] else "")),
                str(v["number"]),
                Text(v["status"] + (" (suspended)" if v.get("suspended") else ""), style=style),
                _when(v["created_at"]),
                Text(v["filename"]),
                Text(" ".join(reason[:2])),
            )
    console.print(versions)
    mine = {a["id"] for a in agents}
    ladder_names: dict[int, str] = {}
    ratings = Table(title="Ratings", box=box.SIMPLE_HEAD)
    for col in ("agent", "ladder", "rank", "mu", "sigma", "mu-3σ", "matches", "wins"):
        ratings.add_column(col, justify="left" if col in ("agent", "ladder") else "right")
    for lad in arena.pages("/ladders"):
        ladder_names[lad["id"]] = lad["name"]
        if not lad["entries"]:
            continue
        board = list(arena.pages(f"/ladders/{lad['id']}/leaderboard"))
        for row in board:
            if row["agent_id"] in mine:
                ratings.add_row(
                    Text(row["label"]),
                    Text(f"{lad['name']} ({lad['state']})"),
                    f"{row['rank']} of {len(board)}",
                    f"{row['mu']:.2f}",
                    f"{row['sigma']:.2f}",
                    f"{row['conservative']:.2f}",
                    str(row["matches"]),
                    str(row["wins"]),
                )
    if ratings.row_count:
        console.print(ratings)
    else:
        console.print(Text("Ratings: not entered in any ladder (submit with --ladder NAME)"))
    recent = Table(title="Recent matches", box=box.SIMPLE_HEAD)
    for col in ("match", "finished", "where", "status", "seat", "rank", "score", "faults"):
        recent.add_column(col, justify="right" if col in ("match", "rank", "score") else "left")
    for a in agents:
        for m in arena.get("/matches", agent_id=a["id"], limit=RECENT_MATCHES)["items"]:
            where = m["kind"]
            if m["ladder_id"] is not None:
                where = f"ladder {ladder_names.get(m['ladder_id'], m['ladder_id'])}"
            for seat in m["participants"]:
                if seat["agent_id"] != a["id"]:
                    continue
                n = len(m["participants"])
                recent.add_row(
                    str(m["id"]),
                    _when(m["finished_at"]),
                    Text(where),
                    m["status"],
                    Text(f"{seat['seat']}: {seat['label']}"),
                    "-" if seat["rank"] is None else f"{seat['rank']} of {n}",
                    "-" if seat["score"] is None else str(seat["score"]),
                    str(seat["faults"]) + (" (forfeited)" if seat["forfeited"] else ""),
                )
    if recent.row_count:
        console.print(recent)
    else:
        console.print(Text("Recent matches: none yet"))


def _get_match(arena: client.Client, match_id: int, suffix: str = "") -> Any:
    """GET /matches/{id}{suffix}, with a 404 naming the match and the arena."""
    try:
        return arena.get(f"/matches/{match_id}{suffix}")
    except client.ClientError as exc:
        if exc.status == 404:
            what = client.detail_message(exc.detail)
            raise client.ClientError(f"match {match_id} on {arena.url}: {what}") from None
        raise


@app.command()
def logs(
    match_id: Annotated[int, typer.Argument(metavar="MATCH", help="The match's id.")],
    seat: Annotated[
        int | None, typer.Option("--seat", help="Only this seat's stderr (it must be yours).")
    ] = None,
    save: Annotated[
        Path | None,
        typer.Option("--save", help="Write the match's cow006-match-1 log to this file."),
    ] = None,
) -> None:
    """A match's result and what your bots in it wrote to stderr (yours only)."""
    arena, creds = _arena(token_needed=False)
    # The match quotes its bots (fault details, the error): printed escaped.
    match = terminal_data(_get_match(arena, match_id))
    seats = match["participants"]
    me = arena.get("/users/me") if creds.token else None
    if seat is not None:
        # Refused before anything is printed: a wrong seat is one error line, not half a page.
        picked = [p for p in seats if p["seat"] == seat]
        if not picked:
            raise SetupError(f"match {match_id} has no seat {seat} (seats 0 to {len(seats) - 1})")
        if me is None:
            raise client.ClientError("reading a bot's stderr needs you logged in (cow006 login)")
        if not (me["is_admin"] or picked[0]["owner_id"] == me["id"]):
            raise client.ClientError(
                f"seat {seat} of match {match_id} is {picked[0]['owner']}'s "
                f"{picked[0]['label']}: only its owner reads its stderr"
            )
    console = _console()
    where = match["kind"]
    if match["ladder_id"] is not None:
        ladder = arena.get(f"/ladders/{match['ladder_id']}")
        where = f"ladder {ladder['name']}"
    # The arena shows a match's seed once it has finished (to admins before): never "None".
    seed_text = f", seed {match['seed']}" if match.get("seed") is not None else ""
    head = f"match {match_id}: {where}, {match['status']}{seed_text}"
    if match["duration"] is not None:
        head += f", played in {match['duration']:.1f} s"
    console.print(Text(head, style="bold"))
    if match["error"]:
        console.print(Text(f"error: {match['error']}", style="red"))
    table = Table(box=box.SIMPLE_HEAD)
    for col in ("seat", "agent", "owner", "score", "rank", "faults"):
        table.add_column(col, justify="left" if col in ("agent", "owner") else "right")
    for p in sorted(seats, key=lambda p: (p["rank"] is None, p["rank"] or 0, p["seat"])):
        table.add_row(
            str(p["seat"]),
            Text(p["label"]),
            Text(p["owner"]),
            "-" if p["score"] is None else str(p["score"]),
            "-" if p["rank"] is None else str(p["rank"]),
            str(p["faults"]) + (" (forfeited)" if p["forfeited"] else ""),
        )
    console.print(table)
    for f in match.get("faults") or []:
        label = next((p["label"] for p in seats if p["seat"] == f.get("seat")), "?")
        where_f = f"round {int(f.get('round', 0)) + 1}, turn {int(f.get('turn', 0)) + 1}"
        detail = f": {f['detail']}" if f.get("detail") else ""
        who = f"seat {f.get('seat')} ({label})"
        console.print(Text(f"fault of {who}, {where_f}: {f.get('kind')}{detail}"))
    if save is not None:
        log = _get_match(arena, match_id, "/log")
        save.parent.mkdir(parents=True, exist_ok=True)
        match_log.write(log, save)
        console.print(Text(f"log written to {save}"))
    if me is None:
        console.print(Text("log in (cow006 login URL) to read your bots' stderr"))
        return
    if seat is not None:
        wanted = [p for p in seats if p["seat"] == seat]
    else:
        wanted = [p for p in seats if p["owner_id"] == me["id"]]
    for p in wanted:
        out = _get_match(arena, match_id, f"/seats/{p['seat']}/stderr")
        console.print()
        console.print(Text(f"stderr of seat {p['seat']} ({out['label']}):", style="bold"))
        text = for_terminal(str(out.get("stderr") or "")).rstrip()
        if not text:
            console.print(Text("  (nothing was written to stderr)"))
        for line in text.splitlines():
            console.print(Text(f"  {line}"))


@app.command()
def replay(
    match: Annotated[
        str,
        typer.Argument(
            metavar="MATCH",
            help="A match id on the arena you are logged in to, or a match log file.",
        ),
    ],
    delay: Annotated[
        float | None,
        typer.Option(
            "--delay",
            help=f"Seconds between two steps (default {REPLAY_DELAY} on a terminal, else 0: "
            "everything at once).",
        ),
    ] = None,
    round_number: Annotated[
        int | None, typer.Option("--round", help="Show only this round (1, 2, ...).")
    ] = None,
) -> None:
    """Replay a match in the terminal: reveals, placements, takes, rows and running totals."""
    if delay is not None and not (math.isfinite(delay) and delay >= 0):
        raise SetupError(f"--delay must be zero or more seconds, not {delay}")
    if Path(match).exists() or not match.isdigit():
        log = match_log.read(match)
        source = match
    else:
        arena, _ = _arena(token_needed=False)
        log = _get_match(arena, int(match), "/log")
        source = f"match {match} on {arena.url}"
    # Rows are rebuilt by the engine from the deals and the decisions; verifying first means
    # a log that breaks the rules is refused with its first inconsistency, not half shown.
    try:
        match_log.verify(log)
    except LogError as exc:
        raise LogError(f"{source}: not a valid match log ({exc})") from None
    n_rounds = len(log["rounds"])
    if round_number is not None and not 1 <= round_number <= n_rounds:
        raise SetupError(f"--round must be 1 to {n_rounds} for this match, not {round_number}")
    console = _console()
    if delay is None:
        delay = REPLAY_DELAY if console.is_terminal else 0.0
    _replay(log, console, source, delay, round_number)


def _row_text(index: int, row: Sequence[int], fresh: set[int], indent: str) -> Text:
    line = Text(f"{indent}row {index}  ", style="dim")
    for i, card in enumerate(row):
        if i:
            line.append(" ")
        line.append(str(card), style="bold cyan" if card in fresh else "bold")
    heads = sum(HEADS[c] for c in row)
    line.append(f"  ({_plural(heads, 'head')})", style="dim")
    return line


def _logged_choice(chosen: dict[int, int]) -> engine.ChooseRow:
    """``choose_row`` for the engine: the row the log says the seat chose."""

    def choose_row(seat: int, card: int) -> int:
        return chosen[seat]

    return choose_row


def _replay(
    log: dict[str, Any], console: Console, source: str, delay: float, only: int | None
) -> None:
    """Print a verified log step by step, every row state computed by the engine."""
    log = terminal_data(log)  # names and fault details may be anyone's text: escaped
    names = transcript.short_names(log)
    width = max(len(n) for n in names)
    n = len(names)

    def pause() -> None:
        if delay > 0:
            time.sleep(delay)

    console.print(Text(f"Replay of {source}: seed {log['seed']}, {n} players", style="bold"))
    for p, short in zip(log["players"], names, strict=True):
        full = f"  ({p['agent']})" if p["agent"] != short else ""
        console.print(Text(f"  seat {p['seat']}  {short}{full}"))
    state = engine.new_match(n)
    for r, rnd in enumerate(log["rounds"]):
        show = only is None or only == r + 1
        engine.start_round(state, rnd["hands"], rnd["rows"])
        before = list(state.scores)
        if show:
            console.print()
            console.rule(Text(f"Round {r + 1}", style="bold"))
            console.print(Text("deal", style="bold"))
            for i, row in enumerate(state.rows):
                console.print(_row_text(i, row, set(), "  "))
            pause()
        for t, turn in enumerate(rnd["turns"]):
            cards = turn["cards"]
            # The log records the row each "lowest" card's player chose: the only decision
            # the placements need besides the cards.
            chosen = {tk["seat"]: tk["row"] for tk in turn["takes"] if tk["reason"] == "lowest"}
            order = engine.reveal(state, cards)
            taken_now = [0] * n
            if show:
                line = Text(f"turn {t + 1:>2}  ", style="bold")
                for seat, card in enumerate(cards):
                    if seat:
                        line.append("  ·  ", style="dim")
                    line.append(f"{names[seat]} ")
                    line.append(str(card), style="bold cyan")
                console.print(line)
            for seat in order:
                card = cards[seat]
                take = engine.place(state, seat, card, _logged_choice(chosen))
                if not show:
                    continue
                line = Text(f"  {names[seat]:<{width}} {card:>3} ")
                if take is None:
                    row = next(i for i, row in enumerate(state.rows) if row[-1] == card)
                    line.append(f"→ row {row}", style="dim")
                else:
                    heads = sum(HEADS[c] for c in take["cards"])
                    taken_now[seat] += heads
                    how = (
                        f"6th card of row {take['row']}"
                        if take["reason"] == "sixth"
                        else f"below every row, chose row {take['row']}"
                    )
                    line.append(f"→ {how}: takes ", style="red")
                    line.append(" ".join(map(str, take["cards"])), style="bold red")
                    line.append(f"  {_plural(heads, 'head')}", style="bold red")
                console.print(line)
                pause()
            # engine.place resolves one card; the turn ends as engine.resolve ends it.
            state.turn += 1
            if show:
                fresh = set(cards)
                for i, row in enumerate(state.rows):
                    console.print(_row_text(i, row, fresh, "    "))
                line = Text("    totals: ")
                for seat in range(n):
                    if seat:
                        line.append(" · ", style="dim")
                    line.append(f"{names[seat]} {before[seat] + state.penalties[seat]}")
                    if taken_now[seat]:
                        line.append(f" (+{taken_now[seat]})", style="bold red")
                console.print(line)
                pause()
        penalties = engine.finish_round(state)
        if show:
            pens = ", ".join(f"{names[s]} {penalties[s]}" for s in range(n))
            console.print(Text(f"round {r + 1} penalties: {pens}", style="bold"))
            totals = ", ".join(f"{names[s]} {state.scores[s]}" for s in range(n))
            console.print(Text(f"totals: {totals}"))
    console.print()
    # The final table from the engine's totals (verify checked that the log's agree).
    final = {**log, "scores": list(state.scores), "ranks": engine.ranks(state.scores)}
    console.print(transcript.result_table(final))


# ``cow006 token ...`` (cow006.token_cli): registered last, once the commands above exist.
from .token_cli import token_app  # noqa: E402

app.add_typer(token_app)
