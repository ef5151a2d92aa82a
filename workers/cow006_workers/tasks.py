"""The Celery tasks, by the names the platform sends them with.

=========================  ===============================================================
``cow006.run_match``       play a queued match under a lease, store its result once (while
                           the next match plays: ``writebehind``)
``cow006.validate_version`` validate a pending version (its smoke match)
``cow006.schedule``        the beat's tick: refill the open ladders' queues, advance leagues
``cow006.reap``            the beat's tick: send again what a dead worker or a lost queue
                           dropped
=========================  ===============================================================

The names are the platform's (``cow006_platform.tasknames``).  The tasks are thin: the work
is in ``runs``, ``validation`` and ``scheduler`` (testable without Celery, and run as they are
by the embedded executors).
Matches created by a task (a refill, a league's next round) are committed before their tasks
are sent.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import after_setup_logger, after_setup_task_logger
from sqlalchemy import select

from cow006_platform import logs, tasknames
from cow006_platform.db import session_scope
from cow006_platform.models import Match
from cow006_platform.settings import Settings

from . import runs, scheduler, validation, writebehind
from .celery_app import app
from .context import get_context

logger = logging.getLogger(__name__)


@after_setup_logger.connect
@after_setup_task_logger.connect
def _structured_logs(logger: logging.Logger, **_: Any) -> None:
    """COW006_LOG_FORMAT=json: Celery's handlers (stderr or --logfile) write JSON lines.

    Connected here because the worker imports this module (the app's ``include``) before it
    sets its logging up, in every way a worker is started (``cow006 worker``, ``celery -A``).
    """
    # Settings(), not get_context(): no database engine in the Celery parent process.
    logs.apply_formatter(logger, Settings())


def match_queues(match_ids: list[int]) -> dict[int, str]:
    """Each match's queue, from its kind (``tasknames.queue_for_match``)."""
    if not match_ids:
        return {}
    try:
        with session_scope(get_context().session_factory) as session:
            kinds = dict(
                session.execute(select(Match.id, Match.kind).where(Match.id.in_(match_ids))).all()
            )
    except Exception:  # the database is away: the ladder's queue, the reaper sorts it out
        logger.exception("cannot read the kinds of matches %s", match_ids)
        kinds = {}
    return {mid: tasknames.queue_for_match(kinds.get(mid)) for mid in match_ids}


def send_matches(match_ids: list[int]) -> None:
    """Send a ``run_match`` task per match (rows committed already), each to its work
    class's queue."""
    for match_id, queue in match_queues(match_ids).items():
        app.send_task(tasknames.RUN_MATCH_TASK, args=[match_id], queue=queue)


def send_validations(version_ids: list[int]) -> None:
    for version_id in version_ids:
        app.send_task(tasknames.VALIDATE_TASK, args=[version_id], queue=tasknames.VALIDATE_QUEUE)


@app.task(name=tasknames.RUN_MATCH_TASK, ignore_result=True)
def run_match(match_id: int) -> str:
    """Play match ``match_id`` (see ``runs.run_match``); one word says what happened."""
    ctx = get_context()
    # The result is stored while the next match plays, where this process plays one match at
    # a time (``writebehind``).
    writer = writebehind.for_task(ctx.settings.write_behind)
    return runs.run_match(
        ctx.session_factory, ctx.settings, int(match_id), send_matches, writer=writer
    ).status


@app.task(name=tasknames.VALIDATE_TASK, ignore_result=True)
def validate_version(version_id: int) -> str:
    """Validate version ``version_id`` (see ``validation.validate_version``); one word."""
    ctx = get_context()
    return validation.validate_version(ctx.session_factory, ctx.settings, int(version_id))


@app.task(name=tasknames.SCHEDULE_TASK, ignore_result=True)
def schedule() -> int:
    """Refill every open ladder's queue, start leagues' next rounds, admit held challenges;
    matches sent."""
    ctx = get_context()
    work = scheduler.schedule_tick(ctx.session_factory, ctx.settings)
    send_matches(work.matches)
    return len(work.matches)


@app.task(name=tasknames.REAP_TASK, ignore_result=True)
def reap() -> int:
    """Send again the matches of dead workers and lost tasks, and stale validations."""
    ctx = get_context()
    work = scheduler.reap(ctx.session_factory, ctx.settings)
    send_matches(work.matches)
    send_validations(work.validations)
    if work.matches or work.validations:
        logger.info(
            "reaper: %d matches and %d validations sent again",
            len(work.matches),
            len(work.validations),
        )
    return len(work.matches) + len(work.validations)
