"""The ``cow006`` commands that talk to an arena: login, submit, status, logs, replay.

They use the arena's HTTP API through ``cow006._client`` (standard library only); a
ClientError is a Cow006Error, so the command prints it as one ``error:`` line.  ``cow006
token`` (``cow006._cli_token``) is the other arena command.  The commands are registered on
the ``cow006`` command by ``cow006.cli``.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from . import _client as client
from . import _export as export
from . import _transcript as transcript
from . import log as match_log
from ._cli_shared import console as make_console
from ._cli_shared import fail, plural
from ._errors import Cow006Error, LogError, SetupError
from .untrusted import for_terminal, terminal_data

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
        typer.echo(f"uploaded {version['label']} ({filename}, {plural(len(data), 'byte')})")
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
        fail(f"validation rejected {version['label']}; fix the bot and submit it again")
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
    console = make_console()
    console.print(Text(f"{me['name']} on {arena.url}: {plural(len(agents), 'agent')}"))
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


def logs(
    match_id: Annotated[
        int | None,
        typer.Argument(metavar="[MATCH]", help="The match's id (or --ladder for all of them)."),
    ] = None,
    seat: Annotated[
        int | None, typer.Option("--seat", help="Only this seat's stderr (it must be yours).")
    ] = None,
    save: Annotated[
        Path | None,
        typer.Option("--save", help="Write the match's cow006-match-1 log to this file."),
    ] = None,
    ladder: Annotated[
        str | None,
        typer.Option(
            "--ladder",
            help="Download every finished match of this ladder (name or id) into --out.",
        ),
    ] = None,
    since: Annotated[
        int | None,
        typer.Option(
            "--since",
            min=0,
            help="With --ladder: the matches after this match id (default: where --out's "
            "index.jsonl ends, so running the command again goes on).",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="With --ladder: the folder for the logs and index.jsonl."),
    ] = None,
) -> None:
    """A match's result and what your bots in it wrote to stderr (yours only); or, with
    --ladder and --out, a ladder's finished matches downloaded as a dataset."""
    if ladder is not None or out is not None or since is not None:
        if match_id is not None or seat is not None or save is not None:
            raise SetupError("--ladder downloads a ladder's logs: give no MATCH, --seat or --save")
        if ladder is None or out is None:
            raise SetupError("a ladder's logs need both --ladder and --out")
        _download(ladder, out, since)
        return
    if match_id is None:
        raise SetupError("give a MATCH id, or --ladder and --out for a ladder's logs")
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
    console = make_console()
    where = match["kind"]
    if match["ladder_id"] is not None:
        found = arena.get(f"/ladders/{match['ladder_id']}")
        where = f"ladder {found['name']}"
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
        answer = _get_match(arena, match_id, f"/seats/{p['seat']}/stderr")
        console.print()
        console.print(Text(f"stderr of seat {p['seat']} ({answer['label']}):", style="bold"))
        text = for_terminal(str(answer.get("stderr") or "")).rstrip()
        if not text:
            console.print(Text("  (nothing was written to stderr)"))
        for line in text.splitlines():
            console.print(Text(f"  {line}"))


def _download(ladder_key: str, out: Path, since: int | None) -> None:
    arena, _ = _arena(token_needed=False)
    ladder = _find_ladder(arena, ladder_key)
    console = make_console()
    name = for_terminal(str(ladder["name"]))

    def progress(done: export.Downloaded) -> None:
        if console.is_terminal:
            console.print(Text(f"  {done.count} logs ...", style="dim"), end="\r")

    done = export.download(arena, int(ladder["id"]), out, since, progress)
    if done.count == 0:
        console.print(Text(f"ladder {name}: no finished match after match {done.since} yet"))
        return
    console.print(
        Text(
            f"ladder {name}: {plural(done.count, 'log')} written to {out} (matches {done.first} "
            f"to {done.last}, {plural(done.pages, 'page')}); run the command again to go on"
        )
    )


def load_log(match: str) -> tuple[Any, str]:
    """A verified match log and where it came from: ``match`` is a log file or, when it is a
    number and no such file exists, a match id on the arena you are logged in to."""
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
    return log, source


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
    log, source = load_log(match)
    n_rounds = len(log["rounds"])
    if round_number is not None and not 1 <= round_number <= n_rounds:
        raise SetupError(f"--round must be 1 to {n_rounds} for this match, not {round_number}")
    console = make_console()
    if delay is None:
        delay = REPLAY_DELAY if console.is_terminal else 0.0
    transcript.print_replay(log, console, source, delay, round_number)
