"""The ``cow006`` command of the arena: the SDK's commands plus ``admin`` and ``db``.

::

    cow006 admin create-user alice --admin    # prints alice's API token, this once
    cow006 admin invite --uses 5              # an invite code (COW006_REGISTRATION=invite)
    cow006 admin approve-user bob             # a pending user (COW006_REGISTRATION=approval)
    cow006 admin disable-user bob             # refuse bob's tokens; enable-user undoes it
    cow006 admin revoke-tokens bob            # every token of bob's refused from now on
    cow006 admin rerate main                  # recompute a ladder's ratings (name or id)
    cow006 admin pause main                   # stop scheduling a ladder's matches; resume
    cow006 admin disable-agent cheater        # out of every ladder's matchmaking; enable-agent
    cow006 admin requeue-failed --ladder main # failed matches played again (rated once)
    cow006 admin unsuspend cheater@2          # seat a suspended version at ladder tables again
    cow006 admin export main main.tar.gz      # every finished match log + index.jsonl
    cow006 db upgrade                         # create or migrate the database schema

The database is the one in COW006_DATABASE_URL (see ``cow006_platform.settings``).  The SDK's
own ``cow006`` (sdk/pyproject.toml) has only the player commands: ``match``, ``tournament``,
``verify``; this module registers those same command objects, it does not copy them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar, cast

import typer

from cow006 import cli as sdk_cli

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from .models import Agent, Ladder, User
    from .settings import Settings

T = TypeVar("T")

# The platform (SQLAlchemy, FastAPI, trueskill) is imported inside the commands that need it:
# ``cow006 match`` and friends start as fast as the SDK's own command.

admin = typer.Typer(
    name="admin",
    help="Administer the arena: users, ladders, agents, failed matches, ratings, exports.",
    no_args_is_help=True,
    add_completion=False,
)
db_app = typer.Typer(
    name="db", help="The arena's database schema.", no_args_is_help=True, add_completion=False
)


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _open(settings: Settings) -> sessionmaker[Session]:
    """A session factory on the settings' database, its schema brought up to date first."""
    from . import db
    from .app import prepare_database

    engine = db.make_engine(settings.database_url)
    prepare_database(settings, engine)
    return db.make_sessionmaker(engine)


@admin.command("create-user")
def create_user_command(
    name: Annotated[str, typer.Argument(help="2 to 40 letters, digits, '_' or '-'.")],
    is_admin: Annotated[bool, typer.Option("--admin", help="Make the user an admin.")] = False,
) -> None:
    """Create a user and print its API token (shown this once; only its hash is stored)."""
    from . import db
    from .security import create_user
    from .settings import Settings

    factory = _open(Settings())
    try:
        with db.session_scope(factory) as session:
            user, token = create_user(session, name, is_admin=is_admin)
            role = "admin" if user.is_admin else "user"
            user_id = user.id
    except ValueError as exc:  # a bad or taken name
        _fail(str(exc))
    typer.echo(f"created {role} {name} (id {user_id}); API token (shown once):", err=True)
    typer.echo(token)


def _user(session: Session, ref: str) -> User:
    from .models import User

    return _named(session, User, ref, "user")


def _set_user_flag(ref: str, flag: str, value: bool) -> tuple[str, bool]:
    """Set ``users.<flag>`` of user ``ref``; (its name, whether it changed)."""
    from . import db
    from .settings import Settings

    factory = _open(Settings())
    with db.session_scope(factory) as session:
        user = _user(session, ref)
        changed = getattr(user, flag) != value
        setattr(user, flag, value)
        return user.name, changed


@admin.command("disable-user")
def disable_user_command(
    user: Annotated[str, typer.Argument(help="The user's name or id.")],
) -> None:
    """Disable a user: every request with one of their tokens is refused (403) from now on,
    in every API process.  Their agents, versions and matches stay."""
    name, changed = _set_user_flag(user, "disabled", True)
    if changed:
        typer.echo(f"disabled user {name}: their tokens are refused")
    else:
        typer.echo(f"user {name} is already disabled")


@admin.command("enable-user")
def enable_user_command(
    user: Annotated[str, typer.Argument(help="The user's name or id.")],
) -> None:
    """Enable a disabled user again (their live tokens work again)."""
    name, changed = _set_user_flag(user, "disabled", False)
    typer.echo(f"enabled user {name}" if changed else f"user {name} is not disabled")


@admin.command("approve-user")
def approve_user_command(
    user: Annotated[str, typer.Argument(help="The user's name or id.")],
) -> None:
    """Approve a user who registered while the arena approves new users
    (COW006_REGISTRATION=approval): their token works from now on."""
    name, changed = _set_user_flag(user, "pending", False)
    typer.echo(f"approved user {name}" if changed else f"user {name} is not pending")


@admin.command("pending-users")
def pending_users_command() -> None:
    """List the users waiting for approval, oldest first."""
    from sqlalchemy import select

    from .models import User
    from .settings import Settings

    factory = _open(Settings())
    with factory() as session:
        rows = session.execute(
            select(User.name, User.created_at).where(User.pending.is_(True)).order_by(User.id)
        ).all()
    for name, created in rows:
        typer.echo(f"{name}\tregistered {created:%Y-%m-%d %H:%M}")
    if not rows:
        typer.echo("no user is waiting for approval", err=True)


@admin.command("revoke-tokens")
def revoke_tokens_command(
    user: Annotated[str, typer.Argument(help="The user's name or id.")],
) -> None:
    """Revoke every token of a user: each is refused at once, in every API process.  The
    user is not disabled; ``cow006 admin new-token NAME`` gives them a new token."""
    from . import db, security
    from .settings import Settings

    factory = _open(Settings())
    with db.session_scope(factory) as session:
        found = _user(session, user)
        name = found.name
        n = security.revoke_all(session, found.id)
    typer.echo(f"revoked {n} token{'' if n == 1 else 's'} of user {name}")


@admin.command("new-token")
def new_token_command(
    user: Annotated[str, typer.Argument(help="The user's name or id.")],
    name: Annotated[str, typer.Option("--name", help="The token's name.")] = "admin-issued",
) -> None:
    """Make a token for a user (one who lost theirs, or whose tokens were revoked) and print
    it, this once."""
    from . import db, security
    from .settings import Settings

    factory = _open(Settings())
    try:
        with db.session_scope(factory) as session:
            found = _user(session, user)
            user_name = found.name
            if any(t.name == name for t in security.live_tokens(session, found.id)):
                _fail(f"user {user_name} already has a token named {name!r}; pick another --name")
            _, token = security.add_token(session, found.id, name)
    except ValueError as exc:  # a bad token name
        _fail(str(exc))
    typer.echo(f"new token {name!r} of user {user_name} (shown once):", err=True)
    typer.echo(token)


@admin.command("invite")
def invite_command(
    uses: Annotated[
        int, typer.Option("--uses", min=1, max=10_000, help="Registrations it is good for.")
    ] = 1,
    days: Annotated[
        float | None,
        typer.Option("--days", min=0.001, max=3650, help="Valid this many days (default: ever)."),
    ] = None,
    note: Annotated[
        str | None, typer.Option("--note", help="Who it is for (kept with it, up to 200 chars).")
    ] = None,
) -> None:
    """Make an invite code for COW006_REGISTRATION=invite and print it, this once (only its
    hash is stored).  It is sent as "invite" with POST /api/users, or given to
    ``cow006 login URL --register NAME --invite CODE``."""
    from . import db, security
    from .settings import Settings

    if note is not None and len(note) > 200:
        _fail("a note is at most 200 characters")
    factory = _open(Settings())
    with db.session_scope(factory) as session:
        _, code = security.create_invite(session, uses, days=days, note=note)
    good = f"{uses} registration{'' if uses == 1 else 's'}"
    until = f" within {days:g} days" if days is not None else ""
    typer.echo(f"invite code for {good}{until} (shown once):", err=True)
    typer.echo(code)


@admin.command("rerate")
def rerate_command(
    ladder: Annotated[str, typer.Argument(help="The ladder's name or id.")],
) -> None:
    """Recompute a ladder's ratings from its finished rated matches, in order."""
    from . import db, ratings
    from .settings import Settings

    factory = _open(Settings())
    with db.session_scope(factory) as session:
        found = _ladder(session, ladder)
        n = ratings.rerate(session, found.id)
        name = found.name
    typer.echo(f"rerated ladder {name}: {n} matches")


def _named(session: Session, model: type[T], ref: str, what: str) -> T:
    """The ``model`` row named ``ref`` (or with id ``ref``); a one-line error if none is."""
    from sqlalchemy import select

    table: Any = model
    found = session.scalar(select(table).where(table.name == ref))
    if found is None and ref.isdigit():
        found = session.get(table, int(ref))
    if found is None:
        _fail(f"no {what} named {ref!r}")
    return cast(T, found)


def _ladder(session: Session, ref: str) -> Ladder:
    from .models import Ladder

    return _named(session, Ladder, ref, "ladder")


def _agent(session: Session, ref: str) -> Agent:
    from .models import Agent

    return _named(session, Agent, ref, "agent")


def _set_ladder_state(ref: str, pausing: bool) -> None:
    from . import db, locks
    from .models import Ladder, LadderState
    from .settings import Settings

    factory = _open(Settings())
    want = LadderState.paused if pausing else LadderState.open
    with db.session_scope(factory) as session:
        ladder = locks.lock(session, Ladder, _ladder(session, ref).id)
        assert ladder is not None  # just found, and ladders are never deleted here
        name = ladder.name
        if ladder.state is LadderState.closed:
            # Reopening a closed ladder is a decision of its own (PATCH /api/ladders/ID).
            _fail(f"ladder {name} is closed; only open and paused ladders are paused or resumed")
        if ladder.state is want:
            typer.echo(f"ladder {name} is already {want.value}")
            return
        ladder.state = want
    if pausing:
        # The scheduler refills open ladders only; what is queued or running still plays.
        typer.echo(f"paused ladder {name}: no new matches are scheduled")
    else:
        typer.echo(f"resumed ladder {name}: its matches are scheduled again")


@admin.command("pause")
def pause_command(
    ladder: Annotated[str, typer.Argument(help="The ladder's name or id.")],
) -> None:
    """Pause a ladder: the scheduler queues no more of its matches (those queued still play)."""
    _set_ladder_state(ladder, pausing=True)


@admin.command("resume")
def resume_command(
    ladder: Annotated[str, typer.Argument(help="The ladder's name or id.")],
) -> None:
    """Resume a paused ladder: the scheduler fills its queue again."""
    _set_ladder_state(ladder, pausing=False)


def _set_agent_disabled(ref: str, disabled: bool) -> None:
    from . import db
    from .settings import Settings

    factory = _open(Settings())
    word = "disabled" if disabled else "enabled"
    with db.session_scope(factory) as session:
        agent = _agent(session, ref)
        name = agent.name
        changed = agent.disabled != disabled
        agent.disabled = disabled
    if not changed:
        typer.echo(f"agent {name} is already {word}")
    elif disabled:
        typer.echo(
            f"disabled agent {name}: no new matches, uploads, entries or challenges "
            "(matches already queued still play)"
        )
    else:
        typer.echo(f"enabled agent {name}")


@admin.command("disable-agent")
def disable_agent_command(
    agent: Annotated[str, typer.Argument(help="The agent's name or id.")],
) -> None:
    """Disable an agent: out of matchmaking and leaderboards; it cannot upload, enter or be
    challenged."""
    _set_agent_disabled(agent, True)


@admin.command("enable-agent")
def enable_agent_command(
    agent: Annotated[str, typer.Argument(help="The agent's name or id.")],
) -> None:
    """Enable a disabled agent again."""
    _set_agent_disabled(agent, False)


@admin.command("unsuspend")
def unsuspend_command(
    version: Annotated[
        str, typer.Argument(help="AGENT@N for one version, or AGENT for all its versions.")
    ],
) -> None:
    """Lift the suspension of a version whose matches kept failing: it is seated at ladder
    tables again, with its failure count cleared."""
    from cow006.untrusted import for_terminal

    from . import db, suspension
    from .settings import Settings

    ref, _, number = version.partition("@")
    if number and not number.isdigit():
        _fail(f"a version is AGENT@N with N a number, not {version!r}")
    factory = _open(Settings())
    with db.session_scope(factory) as session:
        agent = _agent(session, ref)
        rows = [v for v in agent.versions if not number or v.number == int(number)]
        if not rows:
            _fail(f"agent {agent.name} has no version {number}")
        reasons = {v.label: v.suspended_reason for v in rows if v.suspended_at is not None}
        lifted = [v.label for v in rows if suspension.lift(v)]
    for label, reason in reasons.items():
        # The reason may quote a bot: escaped for the terminal.
        typer.echo(f"{label} was suspended: {for_terminal(reason or '')}")
    if lifted:
        typer.echo(f"lifted: {', '.join(lifted)} (seated at ladder tables again)")
    else:
        typer.echo(f"{version}: not suspended, nothing to lift")


@admin.command("requeue-failed")
def requeue_failed_command(
    ladder: Annotated[
        str | None, typer.Option("--ladder", help="Only this ladder's matches (name or id).")
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, help="At most this many matches, oldest first.")
    ] = 1000,
) -> None:
    """Queue failed matches again (attempts reset) and send them to the workers.

    Each match is flipped under its row lock, and only if it is still failed: a failed match
    was never finished, so it has never been rated, and the worker that plays it now rates
    it once (``results.finish_match``).  The tasks are sent through COW006_BROKER_URL; one
    that cannot be sent is sent by the reaper later (the database is the source of truth).
    """
    from datetime import timedelta

    from sqlalchemy import select

    from . import db, locks
    from .executor import CeleryExecutor
    from .models import Match, MatchStatus, utcnow
    from .settings import Settings

    settings = Settings()
    factory = _open(settings)
    query = select(Match.id).where(Match.status == MatchStatus.failed)
    with db.session_scope(factory) as session:
        if ladder is not None:
            query = query.where(Match.ladder_id == _ladder(session, ladder).id)
        ids = list(session.scalars(query.order_by(Match.id).limit(limit)))
    requeued: list[int] = []
    kinds: dict[int, str] = {}
    for match_id in ids:
        with db.session_scope(factory) as session:  # one short transaction per match
            match = locks.lock(session, Match, match_id)
            if match is None or match.status is not MatchStatus.failed or match.rating_applied:
                continue  # requeued or deleted since the list was read
            match.status = MatchStatus.queued
            match.attempts = 0
            match.error = None
            match.worker = None
            match.started_at = None
            match.finished_at = None
            # For a queued match: when the reaper sends its task again (if ours is lost).
            match.lease_expires_at = utcnow() + timedelta(seconds=settings.requeue_seconds)
            requeued.append(match_id)
            kinds[match_id] = match.kind.value  # its work class's queue
    if requeued:
        # Committed first, sent after: a task always finds its row queued.
        executor = CeleryExecutor(settings.celery_broker_url)
        try:
            for match_id in requeued:
                executor.submit_match(match_id, kind=kinds[match_id])
        finally:
            executor.close()
    where = f" of ladder {ladder}" if ladder is not None else ""
    typer.echo(f"requeued {len(requeued)} failed matches{where}")


EXPORT_BATCH = 200  # matches read per query: an export of any size runs in bounded memory


@admin.command("gc")
def gc_command(
    grace: Annotated[
        float | None,
        typer.Option(
            help="Seconds an unreferenced folder must be old to go "
            "(default: COW006_GC_GRACE_SECONDS).",
            min=0,
        ),
    ] = None,
) -> None:
    """Remove what crashed uploads left under COW006_DATA_DIR: old temporary folders, and
    bot folders no version refers to (nothing referenced is ever removed)."""
    from . import debris
    from .settings import Settings

    settings = Settings()
    report = debris.collect(settings, _open(settings), grace)
    for path in report.removed:
        typer.echo(f"removed {path}")
    typer.echo(
        f"{len(report.removed)} removed, {report.referenced} bot folders in use, "
        f"{report.kept_young} left within the grace period"
    )


@admin.command("export")
def export_command(
    ladder: Annotated[str, typer.Argument(help="The ladder's name or id.")],
    out: Annotated[
        Path,
        typer.Argument(help="A .tar.gz file, or a directory (new or empty).", show_default=False),
    ],
) -> None:
    """Export every finished match of a ladder: its cow006-match-1 log (matches/ID.json) and
    one line of index.jsonl (id, seed, participants, scores, ranks) per match.

    Every log is replayed (``cow006.log.verify``) before it is written; nothing is left at
    OUT unless the whole export succeeded.
    """
    import json
    import os
    import shutil
    import tarfile
    import tempfile
    from io import BytesIO

    from sqlalchemy import select

    from cow006 import log as cow_log

    from . import results
    from .db import aware
    from .models import Agent, AgentVersion, Match, MatchSeat, MatchStatus
    from .settings import Settings

    as_tar = out.name.endswith((".tar.gz", ".tgz"))
    if not as_tar and out.exists() and (not out.is_dir() or any(out.iterdir())):
        _fail(f"{out} exists and is not an empty directory")
    if not out.parent.is_dir():
        _fail(f"the folder {out.parent} does not exist")
    factory = _open(Settings())
    with factory() as session:
        found = _ladder(session, ladder)
        ladder_id, name = found.id, found.name
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    tar: tarfile.TarFile | None = None
    count = 0
    try:
        tmp_tar = work / "export.tar.gz"
        if as_tar:
            tar = tarfile.open(tmp_tar, "w:gz")  # noqa: SIM115 (closed below)
        else:
            (work / "matches").mkdir()
        index = BytesIO()

        def put(path: str, data: bytes, mtime: float) -> None:
            if tar is not None:
                info = tarfile.TarInfo(path)
                info.size, info.mtime, info.mode = len(data), int(mtime), 0o644
                tar.addfile(info, BytesIO(data))
            else:
                (work / path).write_bytes(data)

        last = 0
        while True:
            with factory() as session:
                matches = session.scalars(
                    select(Match)
                    .where(
                        Match.ladder_id == ladder_id,
                        Match.status == MatchStatus.finished,
                        Match.id > last,
                    )
                    .order_by(Match.id)
                    .limit(EXPORT_BATCH)
                ).all()
                if not matches:
                    break
                seats: dict[int, list[dict[str, object]]] = {}
                rows = session.execute(
                    select(MatchSeat, AgentVersion.number, Agent.name)
                    .join(AgentVersion, AgentVersion.id == MatchSeat.version_id)
                    .join(Agent, Agent.id == MatchSeat.agent_id)
                    .where(MatchSeat.match_id.in_([m.id for m in matches]))
                    .order_by(MatchSeat.match_id, MatchSeat.seat)
                )
                for seat, number, agent_name in rows:
                    seats.setdefault(seat.match_id, []).append(
                        {
                            "seat": seat.seat,
                            "agent": agent_name,
                            "agent_id": seat.agent_id,
                            "version": number,
                            "version_id": seat.version_id,
                            "score": seat.score,
                            "rank": seat.rank,
                            "faults": seat.faults,
                        }
                    )
                for match in matches:
                    last = match.id
                    log = results.read_log(session, match.id)
                    if log is None:
                        _fail(f"match {match.id} is finished but has no stored log")
                    try:
                        cow_log.verify(log)
                    except Exception as exc:
                        _fail(f"the log of match {match.id} does not replay ({exc})")
                    finished = aware(match.finished_at)
                    mtime = finished.timestamp() if finished is not None else 0.0
                    path = f"matches/{match.id}.json"
                    put(path, json.dumps(log, separators=(",", ":")).encode(), mtime)
                    entry = {
                        "match_id": match.id,
                        "file": path,
                        "seed": match.seed,
                        "rated": match.rated,
                        "finished_at": finished.isoformat() if finished is not None else None,
                        "participants": seats.get(match.id, []),
                        "scores": match.scores,
                        "ranks": match.ranks,
                    }
                    index.write(json.dumps(entry, separators=(",", ":")).encode() + b"\n")
                    count += 1
        put("index.jsonl", index.getvalue(), 0.0)
        if tar is not None:
            tar.close()
            tar = None
            os.replace(tmp_tar, out)
        else:
            if out.exists():
                out.rmdir()  # empty (checked above)
            work.rename(out)
    finally:
        if tar is not None:
            tar.close()
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    typer.echo(f"exported {count} matches of ladder {name} to {out}")


@db_app.command("upgrade")
def upgrade_command() -> None:
    """Create the schema of a new database, or migrate an existing one to this version."""
    from . import db
    from .app import prepare_database
    from .settings import Settings

    settings = Settings()
    engine = db.make_engine(settings.database_url)
    try:
        prepare_database(settings, engine)
    finally:
        engine.dispose()
    typer.echo(f"database at {engine.url.render_as_string(hide_password=True)} is up to date")


def build_app() -> typer.Typer:
    """The full command: the SDK's commands (same objects, same error handling) + ours."""
    app = typer.Typer(
        cls=sdk_cli.app.info.cls,
        name="cow006",
        help="Корова 006 (6 nimmt!) bot arena: play matches and tournaments, verify match "
        "logs, administer the arena's platform.",
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
    )
    app.registered_commands.extend(sdk_cli.app.registered_commands)
    app.registered_groups.extend(sdk_cli.app.registered_groups)  # cow006 token ...
    app.add_typer(admin)
    app.add_typer(db_app)
    return app


def main() -> None:
    """Entry point of the root project's ``cow006`` console script."""
    build_app()(prog_name="cow006")
