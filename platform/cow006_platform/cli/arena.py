"""``cow006 admin`` commands for what plays: ladders (rerate, pause, resume), agents (disable,
enable, lift a suspension), failed matches (play them again), and stored bots (collect what
crashed uploads left)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from ._app import admin, fail, find, open_database, switch, transaction

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from ..models import Agent, Ladder


@admin.command("rerate")
def rerate_command(
    ladder: Annotated[str, typer.Argument(help="The ladder's name or id.")],
) -> None:
    """Recompute a ladder's ratings from its finished rated matches, in order."""
    from .. import ratings

    with transaction() as session:
        found = find(session, "ladder", ladder)
        n = ratings.rerate(session, found.id)
        name = found.name
    typer.echo(f"rerated ladder {name}: {n} matches")


def _ladder_state(pausing: bool) -> Callable[[Session, Ladder], bool]:
    def change(session: Session, ladder: Ladder) -> bool:
        from .. import locks
        from ..models import Ladder, LadderState

        want = LadderState.paused if pausing else LadderState.open
        locked = locks.lock(session, Ladder, ladder.id)
        assert locked is not None  # just found, and ladders are never deleted here
        if locked.state is LadderState.closed:
            # Reopening a closed ladder is a decision of its own (PATCH /api/ladders/ID).
            fail(
                f"ladder {locked.name} is closed; only open and paused ladders are paused or "
                "resumed"
            )
        changed = locked.state is not want
        locked.state = want
        return changed

    return change


# The scheduler refills open ladders only; what is queued or running still plays.
@switch(
    "pause",
    "ladder",
    _ladder_state(pausing=True),
    "paused ladder {name}: no new matches are scheduled",
    "ladder {name} is already paused",
)
def pause_command() -> None:
    """Pause a ladder: the scheduler queues no more of its matches (those queued still play)."""


@switch(
    "resume",
    "ladder",
    _ladder_state(pausing=False),
    "resumed ladder {name}: its matches are scheduled again",
    "ladder {name} is already open",
)
def resume_command() -> None:
    """Resume a paused ladder: the scheduler fills its queue again."""


def _agent_disabled(disabled: bool) -> Callable[[Session, Agent], bool]:
    def change(_session: Session, agent: Agent) -> bool:
        changed = agent.disabled != disabled
        agent.disabled = disabled
        return changed

    return change


@switch(
    "disable-agent",
    "agent",
    _agent_disabled(True),
    "disabled agent {name}: no new matches, uploads, entries or challenges "
    "(matches already queued still play)",
    "agent {name} is already disabled",
)
def disable_agent_command() -> None:
    """Disable an agent: out of matchmaking and leaderboards; it cannot upload, enter or be
    challenged."""


@switch(
    "enable-agent",
    "agent",
    _agent_disabled(False),
    "enabled agent {name}",
    "agent {name} is already enabled",
)
def enable_agent_command() -> None:
    """Enable a disabled agent again."""


@admin.command("unsuspend")
def unsuspend_command(
    version: Annotated[
        str, typer.Argument(help="AGENT@N for one version, or AGENT for all its versions.")
    ],
) -> None:
    """Lift the suspension of a version whose matches kept failing: it is seated at ladder
    tables again, with its failure count cleared."""
    from cow006.untrusted import for_terminal

    from .. import suspension

    ref, _, number = version.partition("@")
    if number and not number.isdigit():
        fail(f"a version is AGENT@N with N a number, not {version!r}")
    with transaction() as session:
        agent = find(session, "agent", ref)
        rows = [v for v in agent.versions if not number or v.number == int(number)]
        if not rows:
            fail(f"agent {agent.name} has no version {number}")
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

    from .. import crud, locks
    from ..executor import CeleryExecutor
    from ..models import Match, MatchStatus, utcnow
    from ..settings import Settings

    settings = Settings()
    factory = open_database(settings)
    with transaction(factory) as session:
        ladder_id = find(session, "ladder", ladder).id if ladder is not None else None
        ids = crud.matches.failed_ids(session, ladder_id, limit)
    requeued: list[int] = []
    kinds: dict[int, str] = {}
    for match_id in ids:
        with transaction(factory) as session:  # one short transaction per match
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
    from .. import debris
    from ..settings import Settings

    settings = Settings()
    report = debris.collect(settings, open_database(settings), grace)
    for path in report.removed:
        typer.echo(f"removed {path}")
    typer.echo(
        f"{len(report.removed)} removed, {report.referenced} bot folders in use, "
        f"{report.kept_young} left within the grace period"
    )
