"""The work behind the tasks, without Celery: run a match under a lease, validate a version.

``run_match`` composes the platform's execution steps (``cow006_platform.execution``):

1. ``claim_match`` with a lease: queued -> running (or running with an expired lease ->
   running again), ``attempts + 1``, this worker's name, ``lease_expires_at``, all under the
   row lock in one transaction.  A match that is settled, or held by a live lease, is left
   alone: the task just returns (it was a duplicate).
2. ``play`` with the bots sandboxed, while a ``lease.Heartbeat`` renews the lease; a lost
   lease kills the match's bots and drops its result.
3. ``finish_claim``: the result is stored (and a ladder match rated) only while this run's
   attempt is still the match's, and only once (``results.finish_match``).
4. What follows: the next round of a league (``execution.after_match``), and a refill of the
   ladder's queue for a ladder match once a quarter of it is missing (the scheduler's tick
   is the backstop, and places newcomers).

Each step logs one line on the ``cow006.runs`` logger when a run starts and ends, with the
wall-clock time: a journal of who ran what when (the tests check that two runs of one match
never overlap).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import DBAPIError

from cow006 import sandbox as cow_sandbox
from cow006_platform import execution, results, workclasses
from cow006_platform.db import session_scope
from cow006_platform.models import AgentVersion, Match, MatchKind, VersionStatus

from . import scheduler
from .context import Context
from .lease import Heartbeat

logger = logging.getLogger(__name__)
runs = logging.getLogger("cow006.runs")
# One structured line per match settled by this worker (finished or failed): with
# COW006_LOG_FORMAT=json, its extras (match_id, status, duration, faults) are JSON fields.
settled = logging.getLogger("cow006.matches")

SendMatches = Callable[[list[int]], None]


@dataclass
class Outcome:
    """What one ``run_match`` did: ``status`` is one word, ``follow_ups`` the matches it
    created (a league's next round, a ladder's refill), already sent."""

    status: str
    follow_ups: list[int] = field(default_factory=list)


def _fail_unclaimed(ctx: Context, match_id: int, error: str) -> None:
    try:
        with session_scope(ctx.session_factory) as session:
            results.fail_match(session, match_id, error)
    except Exception:
        logger.exception("cannot record the failure of match %s", match_id)


def _settled(
    match_id: int, status: str, started: float, faults: int = 0, error: str | None = None
) -> None:
    duration = round(time.monotonic() - started, 3)
    settled.log(
        logging.INFO if status == "finished" else logging.WARNING,
        "match %d %s in %.3f s (%d faults)",
        match_id,
        status,
        duration,
        faults,
        extra={
            "match_id": match_id,
            "status": status,
            "duration": duration,
            "faults": faults,
            "error": error,
        },
    )


def run_match(
    ctx: Context,
    match_id: int,
    send_matches: SendMatches,
    *,
    worker: str | None = None,
    rng: random.Random | None = None,
) -> Outcome:
    """Run one match under a lease (see the module); never raises for the match's problems.

    Database errors are logged and the match left as it is: the reaper sends it again.
    """
    settings = ctx.settings
    factory = ctx.session_factory
    started = time.monotonic()
    try:
        sb = execution.sandbox_for(settings)
    except cow_sandbox.SandboxError as exc:  # fail closed, as the platform does
        _fail_unclaimed(ctx, match_id, str(exc))
        _settled(match_id, "failed", started, error=str(exc))
        return Outcome("failed")
    try:
        claim = execution.claim_match(
            factory,
            settings,
            match_id,
            worker=worker,
            lease_seconds=settings.lease_seconds,
            max_attempts=settings.max_attempts,
        )
    except DBAPIError:
        logger.exception("match %s: the database is unavailable; left for the reaper", match_id)
        return Outcome("deferred")
    except Exception as exc:  # files missing, ...: the match cannot be played
        logger.exception("match %s cannot be run", match_id)
        _fail_unclaimed(ctx, match_id, execution.error_sentence(exc))
        _settled(match_id, "failed", started, error=execution.error_sentence(exc))
        return Outcome("failed")
    if claim is None:
        return Outcome("skipped")

    runs.info(
        "run start match=%d attempt=%d worker=%s t=%.6f",
        claim.match_id,
        claim.attempt,
        claim.worker,
        time.time(),
    )
    heartbeat = Heartbeat(factory, claim, settings.lease_seconds, settings.heartbeat_seconds)
    plan = claim.plan
    error: Exception | None = None
    log: dict[str, Any] = {}
    stderr: list[str | None] = []
    try:
        with heartbeat:
            log, stderr = execution.play(
                plan.paths,
                plan.labels,
                plan.seed,
                plan.limits,
                sb,
                on_start=heartbeat.watch,
                cpu=plan.cpu,
            )
    except Exception as exc:
        error = exc
    runs.info(
        "run end match=%d attempt=%d worker=%s t=%.6f lost=%d",
        claim.match_id,
        claim.attempt,
        claim.worker,
        time.time(),
        int(heartbeat.lost),
    )
    if heartbeat.lost:
        return Outcome("lost")
    if error is not None:
        logger.error("match %s could not be played", match_id, exc_info=error)
        # An error while the bots played may be a bot's: it counts against the table's
        # versions (cow006_platform.suspension).
        execution.fail_claim(
            factory, claim, execution.error_sentence(error), blame=settings.suspend_after
        )
        _settled(match_id, "failed", started, error=execution.error_sentence(error))
        return Outcome("failed")
    try:
        stored = execution.finish_claim(factory, claim, log, stderr)
    except DBAPIError:
        # The database is away (a refused value is stored with the bots' text replaced by
        # finish_claim itself): the lease runs out and the match is run again.
        logger.exception("match %s: cannot store the result; left for the reaper", match_id)
        return Outcome("deferred")
    except Exception as exc:  # a log that does not replay, ...
        logger.exception("match %s: its result was refused", match_id)
        execution.fail_claim(factory, claim, execution.error_sentence(exc))
        _settled(match_id, "failed", started, error=execution.error_sentence(exc))
        return Outcome("failed")
    outcome = Outcome("finished" if stored else "duplicate")
    if stored:
        _settled(match_id, "finished", started, faults=len(log.get("faults", [])))
    outcome.follow_ups = follow_up(ctx, match_id, send_matches, rng=rng)
    return outcome


def refill_batch(depth: int) -> int:
    """How many matches a ladder's queue must miss before a worker refills it: a quarter of
    its depth (the beat's tick tops it up whatever is missing)."""
    return max(1, depth // 4)


def follow_up(
    ctx: Context,
    match_id: int,
    send_matches: SendMatches,
    *,
    rng: random.Random | None = None,
) -> list[int]:
    """After a match: a league's next round, a ladder's refill, held challenges admitted to a
    slot that came free (``workclasses``); the matches created or admitted, sent."""
    created: list[int] = []
    try:
        created += execution.after_match(ctx.session_factory, match_id)
        with session_scope(ctx.session_factory) as session:
            match = session.get(Match, match_id)
            ladder_id = (
                match.ladder_id
                if match is not None and match.kind is MatchKind.ladder and match.rated
                else None
            )
        if ladder_id is not None:
            depth = ctx.settings.ladder_queue_depth
            created += scheduler.refill_ladder(
                ctx.session_factory, ladder_id, depth, rng, min_batch=refill_batch(depth)
            )
    except Exception:  # the scheduler's next tick does the same work
        logger.exception("the work after match %s failed", match_id)
    try:
        created += workclasses.release_challenges(ctx.session_factory, ctx.settings)
    except Exception:  # the scheduler's next tick does the same work
        logger.exception("cannot admit held challenges after match %s", match_id)
    if created:
        send_matches(created)
    return created


def validate_version(ctx: Context, version_id: int) -> str:
    """Validate a pending version (``execution.validate_version``); one word back.

    A version no longer pending (a duplicate task) is left alone.  Platform problems (no
    sandbox, files missing, the database) are logged and leave it pending: the reaper sends
    it again.
    """
    with session_scope(ctx.session_factory) as session:
        version = session.get(AgentVersion, version_id)
        if version is None or version.status is not VersionStatus.pending:
            return "skipped"
    try:
        execution.validate_version(ctx.session_factory, ctx.settings, version_id)
    except Exception:
        logger.exception("version %s could not be validated; left pending", version_id)
        return "deferred"
    with session_scope(ctx.session_factory) as session:
        version = session.get(AgentVersion, version_id)
        return version.status.value if version is not None else "skipped"
